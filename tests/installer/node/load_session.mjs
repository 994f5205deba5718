// Long-lived ESM host: loads the installed plugin like OpenCode does, with a client whose
// in-process server only records the reply calls (`client._client.post`), and feeds the
// events of <dir>/batch-<n>.json as each file appears (then writes <dir>/done-<n>).
// A batch holding the string "exit" ends the host. argv: <plugin file> <dir>.
import { existsSync, readFileSync, appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [file, dir] = process.argv.slice(2);
const client = {
  _client: {
    post: async (request) => {
      appendFileSync(join(dir, "posts.jsonl"), JSON.stringify(request) + "\n");
      return { data: true };
    },
  },
};
const mod = await import(pathToFileURL(file).href);
const hooks = await mod.default({ client, project: {}, directory: process.cwd(), worktree: process.cwd() });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let n = 0; ; n++) {
  const batch = join(dir, `batch-${n}.json`);
  while (!existsSync(batch)) await sleep(50);
  const events = JSON.parse(readFileSync(batch, "utf8"));
  if (events === "exit") break;
  for (const event of events) await hooks.event({ event });
  writeFileSync(join(dir, `done-${n}`), "");
}
process.exit(0);
