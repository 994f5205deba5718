// Long-lived ESM host: loads the installed Pi extension like Pi does (a default-export
// factory given `pi.on`), with a UI whose confirm dialog stays open until it is aborted
// (signal) or answered "in the terminal" by a command. Commands come from
// <dir>/batch-<n>.json as each appears (then <dir>/done-<n> is written):
//   ["emit", name, event]       run the extension's handlers for an event
//   ["confirm", title, message] open a dialog through ctx.ui.confirm (as a user's extension
//                               would); its result goes to <dir>/result-<k>.json
//   ["tty", true|false]         answer the open dialog in the terminal
//   "exit"                      end the host
// argv: <extension file> <dir>.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [file, dir] = process.argv.slice(2);
const handlers = new Map();
const pi = { on: (name, h) => handlers.set(name, [...(handlers.get(name) || []), h]) };
let open = null;
const ui = {
  confirm: (title, message, opts) => new Promise((resolve) => {
    open = resolve;
    writeFileSync(join(dir, "dialog.json"), JSON.stringify({ title, message }));
    if (opts && opts.signal) opts.signal.addEventListener("abort", () => resolve(false), { once: true });
  }),
};
const ctx = { ui, sessionManager: { getSessionId: () => "pi-ses-1" } };
const mod = await import(pathToFileURL(file).href);
mod.default(pi);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let dialogs = 0;
for (let n = 0; ; n++) {
  const batch = join(dir, `batch-${n}.json`);
  while (!existsSync(batch)) await sleep(50);
  const cmd = JSON.parse(readFileSync(batch, "utf8"));
  if (cmd === "exit") break;
  if (cmd[0] === "emit") for (const h of handlers.get(cmd[1]) || []) await h(cmd[2], ctx);
  if (cmd[0] === "confirm") {
    const k = dialogs++;
    ctx.ui.confirm(cmd[1], cmd[2]).then((r) => writeFileSync(join(dir, `result-${k}.json`), JSON.stringify(r)));
  }
  if (cmd[0] === "tty" && open) open(cmd[1]);
  writeFileSync(join(dir, `done-${n}`), "");
}
process.exit(0);
