//! `ci::<name>`: the CI templates under `ci/` parse as YAML and have the shape their CI systems
//! require (host).

use std::path::Path;

use libtest_mimic::{Failed, Trial};

pub fn trials(root: &Path) -> Vec<Trial> {
    let gh = root.join("ci/github/racegate-gpu.yml");
    let gl = root.join("ci/gitlab/racegate.gitlab-ci.yml");
    vec![
        Trial::test("ci::github_workflow_is_valid", move || {
            let y = load_yaml(&gh)?;
            if y["name"].as_str().is_none() || y["on"].is_badvalue() {
                return Err("a workflow needs `name` and `on`".into());
            }
            let jobs = y["jobs"].as_hash().ok_or("no `jobs` mapping")?;
            for (name, job) in jobs {
                let name = name.as_str().unwrap_or("?");
                if job["runs-on"].is_badvalue()
                    || job["steps"].as_vec().is_none_or(|s| s.is_empty())
                {
                    return Err(format!("job `{name}` needs `runs-on` and `steps`").into());
                }
                for step in job["steps"].as_vec().unwrap() {
                    if step["uses"].is_badvalue() == step["run"].is_badvalue() {
                        return Err(format!(
                            "job `{name}`: every step has exactly one of `uses` and `run`"
                        )
                        .into());
                    }
                }
            }
            let gpu = &y["jobs"]["gpu"];
            let labels: Vec<&str> = gpu["runs-on"]
                .as_vec()
                .ok_or("gpu job: runs-on must be a label list")?
                .iter()
                .filter_map(|l| l.as_str())
                .collect();
            if !labels.contains(&"self-hosted")
                || !labels.contains(&"gpu")
                || gpu["concurrency"].is_badvalue()
            {
                return Err(
                    "the gpu job runs on [self-hosted, gpu] runners with a concurrency group"
                        .into(),
                );
            }
            Ok(())
        })
        .with_kind("host"),
        Trial::test("ci::gitlab_job_is_valid", move || {
            let y = load_yaml(&gl)?;
            let stages: Vec<&str> = y["stages"]
                .as_vec()
                .ok_or("no `stages`")?
                .iter()
                .filter_map(|s| s.as_str())
                .collect();
            let map = y.as_hash().ok_or("not a mapping")?;
            let mut jobs = 0;
            for (k, job) in map {
                let k = k.as_str().unwrap_or("");
                if ["stages", "include", "variables", "default", "workflow"].contains(&k) {
                    continue;
                }
                jobs += 1;
                if job["script"].as_vec().is_none_or(|s| s.is_empty()) {
                    return Err(format!("job `{k}` has no script").into());
                }
                let stage = job["stage"]
                    .as_str()
                    .ok_or(format!("job `{k}` has no stage"))?;
                if !stages.contains(&stage) {
                    return Err(format!("job `{k}`: stage `{stage}` is not in `stages`").into());
                }
            }
            let gpu = &y["racegate:gpu"];
            let tags: Vec<&str> = gpu["tags"]
                .as_vec()
                .ok_or("gpu job has no tags")?
                .iter()
                .filter_map(|t| t.as_str())
                .collect();
            if jobs < 2 || !tags.contains(&"gpu") {
                return Err("expected a build job and a `gpu`-tagged job".into());
            }
            if gpu["artifacts"]["when"].as_str() != Some("always")
                || gpu["artifacts"]["reports"]["junit"].is_badvalue()
            {
                return Err("the gpu job must publish JUnit reports `when: always`".into());
            }
            Ok(())
        })
        .with_kind("host"),
    ]
}

fn load_yaml(path: &Path) -> Result<yaml_rust2::Yaml, Failed> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut docs = yaml_rust2::YamlLoader::load_from_str(&text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if docs.len() != 1 {
        return Err(format!("{}: expected one YAML document", path.display()).into());
    }
    Ok(docs.remove(0))
}
