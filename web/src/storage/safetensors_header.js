// The JSON of a safetensors header, read more strictly than JSON.parse does: JSON.parse keeps the
// last of two equal keys without a word, reads "2.0" or "2e0" as 2, builds whatever nesting the
// text has (100 MB of '[' would exhaust memory), and its objects list integer-like keys ("10",
// "2") before the others, not in the file's order. So the text is scanned once before JSON.parse
// sees it: nesting deeper than a header ever needs is refused, every key of every object is
// decoded (so "a" and "\u0061" are the same key) and checked against its siblings, every number
// must be written as a non-negative integer (the only numbers a header has are shapes and
// offsets), and the key order of the top level and of each entry is recorded. Text that is not
// JSON stops the scan where it stops making sense; JSON.parse then says what is wrong with it.
import { SafetensorsError } from '../base/errors.js';

/** Top-level object → entry object → shape / data_offsets array. */
export const MAX_DEPTH = 3;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN = new Set([0x7b, 0x5b]);   // { [
const CLOSE = new Set([0x7d, 0x5d]);  // } ]
const COMMA = 0x2c;
const isDigit = (c) => c >= 0x30 && c <= 0x39;
/** Characters a JSON number is made of: digits, - + . e E. */
const isNumberChar = (c) => isDigit(c) || c === 0x2d || c === 0x2b || c === 0x2e || c === 0x65 || c === 0x45;

function headerError(message, actual) {
  return new SafetensorsError(`safetensors header: ${message}`, { argument: 'header', expected: 'a valid safetensors header', actual });
}

/** Where a key sits, for messages: the top level, or inside the entry of a top-level key. */
const place = (path) => (path.length === 0 ? 'at the top level'
  : `in the entry ${path.map((k) => JSON.stringify(k)).join(' → ')}`);

/** Index of the quote that closes the string opening at `start` (text.length if none). */
function stringEnd(text, start) {
  let j = start + 1;
  for (let c; j < text.length && (c = text.charCodeAt(j)) !== QUOTE;) j += c === BACKSLASH ? 2 : 1;
  return Math.min(j, text.length);
}

/** A key's text decoded (escapes and all), or undefined where it is not a JSON string. */
function decodeKey(raw) {
  if (!raw.includes('\\')) return raw.slice(1, -1);
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}

// A surrogate escape (\ud800–\udfff), and a lone surrogate in decoded text: one not paired high
// then low. UTF-8 cannot carry one, so only an escape can make it.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Refuses a string (key or value) whose escapes make a lone surrogate, as serde_json (the
 * reference implementation's parser) does: such a name is not Unicode text, and JSON.parse would
 * take it silently.
 */
function checkSurrogates(raw, path) {
  if (!SURROGATE_ESCAPE.test(raw)) return;
  const decoded = decodeKey(raw);
  if (decoded !== undefined && LONE_SURROGATE.test(decoded)) {
    throw headerError(`string ${raw} ${place(path)} escapes a lone surrogate: not Unicode text (serde_json refuses it too)`, raw);
  }
}

/** The scan described above: { order, entryOrder } for text that JSON.parse will accept. */
function scan(text) {
  const entryOrder = new Map();
  let order = [];
  // One frame per open object or array: { keys: Set | null (arrays), list, path }.
  const stack = [];
  let pendingKey = null;   // the key just read, naming the value that follows it
  let expectKey = false;   // inside an object, after '{' or ','
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const top = stack[stack.length - 1];
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      checkSurrogates(text.slice(i, end + 1), top?.path ?? []);
      if (expectKey) {
        const key = decodeKey(text.slice(i, end + 1));
        if (key === undefined) break;
        if (top.keys.has(key)) throw headerError(`duplicate key ${JSON.stringify(key)} ${place(top.path)}`, key);
        top.keys.add(key);
        top.list.push(key);
        pendingKey = key;
        expectKey = false;
      }
      i = end;
    } else if (OPEN.has(c)) {
      if (stack.length === MAX_DEPTH) {
        throw headerError(`nesting deeper than ${MAX_DEPTH} levels at character ${i}, ${place(top.path)}: a header is an object `
          + 'of tensor entries, whose shape and data_offsets are arrays of integers', 'too deep');
      }
      const path = top ? [...top.path, top.keys ? pendingKey : '[]'] : [];
      stack.push({ keys: c === 0x7b ? new Set() : null, list: [], path });
      expectKey = c === 0x7b;
    } else if (CLOSE.has(c)) {
      const frame = stack.pop();
      if (!frame) break;
      if (frame.keys && frame.path.length === 0) order = frame.list;
      if (frame.keys && frame.path.length === 1) entryOrder.set(frame.path[0], frame.list);
      expectKey = false;
    } else if (c === COMMA) {
      if (!top) break;
      expectKey = top.keys !== null;
    } else if (c === 0x2d || isDigit(c)) {   // a number starts with '-' or a digit
      let end = i + 1;
      while (end < text.length && isNumberChar(text.charCodeAt(end))) end++;
      // Plain digits, no leading zero; checked by code (a header may hold 50 M numbers).
      let digits = isDigit(c) && (c !== 0x30 || end === i + 1);
      for (let j = i + 1; digits && j < end; j++) digits = isDigit(text.charCodeAt(j));
      if (!digits) {
        const number = text.slice(i, end);
        throw headerError(`number ${number} ${place(top?.path ?? [])}: expected a non-negative integer in plain digits `
          + '(no sign, fraction, exponent or leading zero)', number);
      }
      i = end - 1;
    }
  }
  return { order, entryOrder };
}

/**
 * Parses the header text. Returns { value (JSON.parse's), order: string[] (top-level keys in file
 * order), entryOrder: Map(top-level key → its object's keys in file order) }. Throws
 * SafetensorsError for nesting deeper than MAX_DEPTH, a duplicate key, a number not written as
 * digits, or text that is not JSON.
 */
export function parseHeader(text) {
  const { order, entryOrder } = scan(text);
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw headerError(`not valid JSON (${e.message})`, 'invalid JSON');
  }
  return { value, order, entryOrder };
}
