// CommonJS host: loads the installed plugin like OpenCode's named-export loader (every
// exported function is a plugin; the same function exported twice runs once).
// argv: <plugin file> <events JSON>; prints {"plugins": n} after feeding every event.
const { pathToFileURL } = require("node:url");

(async () => {
  const [file, events] = process.argv.slice(2);
  const mod = await import(pathToFileURL(file).href);
  const plugins = [...new Set(Object.entries(mod).filter(([, f]) => typeof f === "function").map(([, f]) => f))];
  for (const plugin of plugins) {
    const hooks = await plugin({ client: {}, project: {}, directory: process.cwd(), worktree: process.cwd() });
    for (const event of JSON.parse(events)) await hooks.event({ event });
  }
  console.log(JSON.stringify({ plugins: plugins.length }));
})();
