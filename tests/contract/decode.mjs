// The PyTorch fixtures (tests/fixtures/mha_parity.json, written by make_fixtures.py) as typed
// arrays. Plain ESM with atob only: Node (>= 16), Chromium pages and the packed-package apps run
// it as is. Reading the JSON is the environment's job (readFileSync, fetch or a bundler).

const DTYPES = { float32: Float32Array, uint8: Uint8Array, int32: Int32Array };

/** { dtype, shape, b64 } (little-endian raw bytes) → { data: Float32Array | Uint8Array | Int32Array, shape }. */
export function decodeTensor({ dtype, shape, b64 }) {
  const Type = DTYPES[dtype];
  if (!Type) throw new Error(`unknown fixture dtype ${dtype}`);
  const text = atob(b64);
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  return { data: new Type(bytes.buffer, 0, bytes.length / Type.BYTES_PER_ELEMENT), shape };
}

const isEncoded = (v) => v !== null && typeof v === 'object' && 'b64' in v;
const decodeFields = (obj) =>
  Object.fromEntries(Object.entries(obj ?? {}).map(([k, v]) => [k, isEncoded(v) ? decodeTensor(v) : v]));

// create() options with a rotary table ({ cos, sin } encoded) get it decoded.
export const decodeCreate = (create) => (create?.rotary?.table
  ? { ...create, rotary: { ...create.rotary, table: decodeFields(create.rotary.table) } } : create);

/** One case of the JSON with every tensor decoded (fresh arrays: a caller may change them). */
export const decodeCase = (c) => ({
  ...c,
  create: decodeCreate(c.create),
  stateDict: decodeFields(c.stateDict),
  inputs: decodeFields(c.inputs),
  options: decodeFields(c.options),
  expected: decodeFields(c.expected),
});

/** The parsed mha_parity.json → its cases, decoded. */
export const decodeFixtures = (json) => json.cases.map(decodeCase);
