// Bundles the page (plain TypeScript and the graph-layout library) into dist/assets: no CDN.
import { copyFile, mkdir } from "node:fs/promises";
import { build } from "esbuild";

const root = new URL("../", import.meta.url);
const out = new URL("dist/assets/", root);
await mkdir(out, { recursive: true });
await build({
  entryPoints: [new URL("src/web/app.ts", root).pathname],
  outfile: new URL("app.js", out).pathname,
  bundle: true,
  format: "esm",
  target: "es2022",
  minify: true,
  legalComments: "none",
  logLevel: "warning",
});
for (const file of ["index.html", "app.css", "icon.svg"]) {
  await copyFile(new URL(`src/web/${file}`, root), new URL(file, out));
}
