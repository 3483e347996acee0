//! `ci_templates::<name>`: the CI templates under `ci/` parse as YAML and have the shape their CI systems
//! require; the GitLab ones validate against GitLab's CI schema (a committed fixture, see
//! `fixtures/gitlab/SOURCE.md`), and the user-facing ones gate a user's project without touching
//! their `stages:`. actionlint checks the GitHub ones in `ci/lint-templates`.

use std::path::Path;

use crate::{repo_root, Failed};

#[test]
fn github_workflow_is_valid() -> Result<(), Failed> {
    let gh = repo_root().join("ci/github/racegate-gpu.yml");
    let y = load_yaml(&gh)?;
    if y["name"].as_str().is_none() || y["on"].is_badvalue() {
        return Err("a workflow needs `name` and `on`".into());
    }
    let jobs = y["jobs"].as_hash().ok_or("no `jobs` mapping")?;
    for (name, job) in jobs {
        let name = name.as_str().unwrap_or("?");
        if job["runs-on"].is_badvalue() || job["steps"].as_vec().is_none_or(|s| s.is_empty()) {
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
            "the gpu job runs on [self-hosted, gpu] runners with a concurrency group".into(),
        );
    }
    Ok(())
}

#[test]
fn gitlab_job_is_valid() -> Result<(), Failed> {
    let gl = repo_root().join("ci/gitlab/racegate.gitlab-ci.yml");
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

/// YAML as JSON, for the schema: mappings with string keys, integers, reals, booleans, null.
fn to_json(y: &yaml_rust2::Yaml) -> serde_json::Value {
    use yaml_rust2::Yaml;
    match y {
        Yaml::Hash(h) => serde_json::Value::Object(
            h.iter()
                .map(|(k, v)| (k.as_str().unwrap_or("?").to_string(), to_json(v)))
                .collect(),
        ),
        Yaml::Array(a) => serde_json::Value::Array(a.iter().map(to_json).collect()),
        Yaml::String(s) => s.clone().into(),
        Yaml::Integer(i) => (*i).into(),
        Yaml::Real(r) => r.parse::<f64>().map(Into::into).unwrap_or_default(),
        Yaml::Boolean(b) => (*b).into(),
        _ => serde_json::Value::Null,
    }
}

/// Every GitLab template validates against GitLab's own CI schema.
#[test]
fn gitlab_templates_match_the_schema() -> Result<(), Failed> {
    let root = &repo_root();
    let text =
        std::fs::read_to_string(root.join("harness/tests/fixtures/gitlab/gitlab-ci-schema.json"))
            .map_err(|e| e.to_string())?;
    let schema: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    let validator = jsonschema::options()
        .with_pattern_options(jsonschema::PatternOptions::fancy_regex())
        .build(&schema)
        .map_err(|e| e.to_string())?;
    for name in [
        "racegate.gitlab-ci.yml",
        "racegate-gate.gitlab-ci.yml",
        "racegate-gate-sharded.gitlab-ci.yml",
    ] {
        let doc = to_json(&load_yaml(&root.join("ci/gitlab").join(name))?);
        let errors: Vec<String> = validator
            .iter_errors(&doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        if !errors.is_empty() {
            return Err(format!("{name} breaks GitLab's CI schema:\n{}", errors.join("\n")).into());
        }
    }
    // The schema rejects what it must: a job with an unknown keyword.
    let mut bad = to_json(&load_yaml(
        &root.join("ci/gitlab/racegate-gate.gitlab-ci.yml"),
    )?);
    bad["racegate:gate"]["scirpt"] = serde_json::json!(["true"]);
    if validator.is_valid(&bad) {
        return Err("the schema accepted a misspelled keyword".into());
    }
    Ok(())
}

/// The templates for a user's repository: install racegate (no `ci/setup`, which users do not
/// have), gate the manifest and a program, publish SARIF and JUnit (GitLab: Code Quality too),
/// and GitLab's never defines `stages:`.
#[test]
fn user_templates_gate_the_users_project() -> Result<(), Failed> {
    let root = &repo_root();
    let gh = std::fs::read_to_string(root.join("ci/github/racegate-gate.yml"))
        .map_err(|e| e.to_string())?;
    let gl_path = root.join("ci/gitlab/racegate-gate.gitlab-ci.yml");
    let gl = std::fs::read_to_string(&gl_path).map_err(|e| e.to_string())?;
    for (name, text, must) in [
        (
            "github",
            &gh,
            &[
                "cargo install --locked",
                "racegate setup",
                "racegate gate --github",
                "-- $RACEGATE_PROGRAM",
                "upload-sarif",
                "--junit",
            ][..],
        ),
        (
            "gitlab",
            &gl,
            &[
                "cargo install --locked",
                "racegate setup",
                "--codequality",
                "-- $RACEGATE_PROGRAM",
                "codequality:",
                "junit:",
            ][..],
        ),
    ] {
        for m in must {
            if !text.contains(m) {
                return Err(format!("the {name} template lacks `{m}`").into());
            }
        }
        if text.contains("ci/setup") || text.contains("ci/bundle") && name == "gitlab" {
            return Err(format!("the {name} template uses racegate's own ci/ scripts").into());
        }
    }
    let y = load_yaml(&gl_path)?;
    if !y["stages"].is_badvalue() {
        return Err(
            "the GitLab template must not define `stages:` (it would replace the user's)".into(),
        );
    }
    // The sharded variants: a matrix (or `parallel:`) of `gate --partition K/N` and a merge job,
    // installing a pinned racegate from a URL the user sets (none written in), cached.
    for (name, path) in [
        ("github sharded", "ci/github/racegate-gate-sharded.yml"),
        (
            "gitlab sharded",
            "ci/gitlab/racegate-gate-sharded.gitlab-ci.yml",
        ),
    ] {
        let text = std::fs::read_to_string(root.join(path)).map_err(|e| e.to_string())?;
        for m in [
            "--partition",
            "racegate merge shard-",
            "--rev \"$RACEGATE_REV\"",
            "RACEGATE_GIT: \"\"",
            "cache",
        ] {
            if !text.contains(m) {
                return Err(format!("the {name} template lacks `{m}`").into());
            }
        }
        if text.contains("github.com/racegate") {
            return Err(format!("the {name} template hard-codes racegate's URL").into());
        }
        if !load_yaml(&root.join(path))?["stages"].is_badvalue() {
            return Err(format!("the {name} template defines `stages:`").into());
        }
    }
    let gh_y = load_yaml(&root.join("ci/github/racegate-gate.yml"))?;
    let labels: Vec<&str> = gh_y["jobs"]["gate"]["runs-on"]
        .as_vec()
        .ok_or("gate job: runs-on must be a label list")?
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    if !labels.contains(&"self-hosted") || !labels.contains(&"gpu") {
        return Err("the gate job runs on [self-hosted, gpu]".into());
    }
    Ok(())
}
