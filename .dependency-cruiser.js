// The layers of src/, lowest first: a folder imports only from the layers below its own, never
// from a folder beside it or above it, so no folders import one another in a loop
// (docs/architecture.md, "Layers"). `npm run lint` runs it.
//
// The features are not named: FEATURES stands for every folder of src/ that no other layer names
// (profiles/, customers/, the change feed's feed/, and any kind added later), so a new kind's
// folder is a feature with no edit here. A feature imports neither another feature nor a layer above.
const FEATURES = Symbol('every folder no other layer names');
const LAYERS = [
  ['errors.ts', 'instance.ts'], // leaves anyone may use
  ['config/'],
  ['logging/', 'metrics/'],
  ['tracing/'], // OpenTelemetry: the SDK's start, the service's own spans, the redaction
  ['storage/'], // the drivers' handles (SQLite, MongoDB client), the store errors, write failures
  ['event-store/'], // each store: its port and its adapters
  ['read-store/'],
  ['key-store/'],
  ['sealing/'], // sealed values: a wrapper of any event store
  ['projections/'], // the projector engine, on the ports
  ['records/'], // the shared kernel: fold, writer, command context, erasure
  ['audit/', 'idempotency/'],
  ['http/'], // envelope, errors filter, token, limits, validation
  ['docs/'], // the OpenAPI decorators and document
  ['kinds/'], // what a kind of record is made of, as its feature folder defines it
  [FEATURES], // the kinds of record, each a folder, and the change feed of their records
  ['health/'], // the operators' endpoints: /health, /metrics
  ['stores/'], // the wiring: chooses and wraps the stores, handed the record kinds
  ['cli/', 'app.module.ts', 'app.ts', 'main.ts', 'cli.ts', 'record-kinds.ts', 'read-models.ts', 'runtime.ts', 'memory-sizing.ts'], // the top
];

const NAMED = LAYERS.flat().filter((entry) => entry !== FEATURES);
const FEATURE_FOLDER = `^src/(?!(${NAMED.filter((entry) => entry.endsWith('/'))
  .map((folder) => folder.slice(0, -1))
  .join('|')})/)[^/]+/`;

const path = (entry) => (entry === FEATURES ? FEATURE_FOLDER : `^src/${entry.replace(/\./g, '\\.')}`);
const either = (entries) => `(${entries.map(path).join('|')})`;

// The top layer has nothing above it, and its entry points may use one another (no-circular still holds).
const layerRules = LAYERS.slice(0, -1).flatMap((layer, i) =>
  layer.map((entry) => {
    const above = LAYERS.slice(i + 1).flat();
    const beside = layer.filter((other) => other !== entry);
    if (entry === FEATURES) {
      return {
        name: 'layer-features',
        comment: 'A feature folder imports only from the layers below it, never another feature (.dependency-cruiser.js)',
        severity: 'error',
        // $1, the importing feature's folder, is the one feature folder it may import from.
        from: { path: '^src/([^/]+)/', pathNot: `^src/(${NAMED.map((e) => e.replace(/\/$/, '').replace(/\./g, '\\.')).join('|')})(/|$)` },
        to: { path: either([...above, FEATURES]), pathNot: '^src/$1/' },
      };
    }
    return {
      name: `layer-${entry.replace(/\W+$/, '')}`,
      comment: `src/${entry} imports only from the layers below it (.dependency-cruiser.js)`,
      severity: 'error',
      from: { path: path(entry) },
      to: { path: either([...above, ...beside]) },
    };
  }),
);

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'adapters-only-in-the-wiring',
      comment: 'Only src/stores/ (and an adapter its own folder) imports a store adapter: everything else uses the ports',
      severity: 'error',
      from: { pathNot: '^src/(stores|event-store|read-store|key-store)/' },
      to: { path: '^src/(event-store|read-store|key-store)/(sqlite|eventstoredb|mongodb)-' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'unfiled',
      comment: 'Every file of src/ belongs to a layer',
      severity: 'error',
      from: { path: '^src/', pathNot: either(LAYERS.flat()) },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.build.json' },
    exclude: { path: '^(node_modules|dist)' },
  },
};
