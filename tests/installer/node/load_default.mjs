// ESM host: loads the installed plugin like OpenCode's default-export loader.
// argv: <plugin file> <events JSON>; prints {"plugins": n} after feeding every event.
import { pathToFileURL } from "node:url";

const [file, events] = process.argv.slice(2);
const mod = await import(pathToFileURL(file).href);
const hooks = await mod.default({ client: {}, project: {}, directory: process.cwd(), worktree: process.cwd() });
for (const event of JSON.parse(events)) await hooks.event({ event });
console.log(JSON.stringify({ plugins: 1 }));
