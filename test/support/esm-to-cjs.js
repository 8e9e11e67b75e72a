// Jest transform for ES-module-only packages (NestJS 12) in node_modules.
// Node runs them from our CommonJS build through require(esm), but Jest's own module loader can
// do that only on Node 24.9+, so on every runtime alike they are compiled to CommonJS here.
// `import.meta.url` has no CommonJS form in TypeScript's output: it becomes this file's URL first,
// and a module's own `require = createRequire(import.meta.url)` gives way to the one CommonJS has.
const { createHash } = require('node:crypto');
const { readFileSync } = require('node:fs');
const ts = require('typescript');

const IMPORT_META_URL = "require('node:url').pathToFileURL(__filename).href";
// The cache key covers this file too, so a change here is never masked by Jest's cache.
const SELF = readFileSync(__filename);
const OWN_REQUIRE = /^const require = createRequire\(import\.meta\.url\);$/m;

module.exports = {
  process(source, filename) {
    const out = ts.transpileModule(source.replace(OWN_REQUIRE, '').replaceAll('import.meta.url', IMPORT_META_URL), {
      fileName: filename,
      compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, allowJs: true, sourceMap: true },
    });
    return { code: out.outputText, map: out.sourceMapText };
  },
  getCacheKey(source, filename) {
    return createHash('sha1').update(ts.version).update(SELF).update(filename).update(source).digest('hex');
  },
};
