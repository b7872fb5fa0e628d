// The JSON of a safetensors header, read more strictly than JSON.parse does: JSON.parse keeps the
// last of two equal keys without a word and reads "2.0" or "2e0" as 2, and its objects list
// integer-like keys ("10", "2") before the others, not in the file's order. So the text is parsed
// by JSON.parse (which checks the syntax) and then scanned once: every key of every object
// decoded (so "a" and "\u0061" are the same key) and checked against its siblings, every number
// checked to be written as a non-negative integer (the only numbers a header has are shapes and
// offsets), and the key order of the top level and of each entry recorded.
import { SafetensorsError } from './errors.js';

const INTEGER = /^(?:0|[1-9][0-9]*)$/;

function headerError(message, actual) {
  return new SafetensorsError(`safetensors header: ${message}`, { argument: 'header', expected: 'a valid safetensors header', actual });
}

/** Where a key sits, for messages: the top level, or inside the entry of a top-level key. */
const place = (path) => (path.length === 0 ? 'at the top level'
  : `in the entry ${path.map((k) => JSON.stringify(k)).join(' → ')}`);

/**
 * Parses the header text. Returns { value (JSON.parse's), order: string[] (top-level keys in file
 * order), entryOrder: Map(top-level key → its object's keys in file order) }. Throws
 * SafetensorsError for text that is not JSON, a duplicate key or a number not written as digits.
 */
export function parseHeader(text) {
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw headerError(`not valid JSON (${e.message})`, 'invalid JSON');
  }
  // The text is valid JSON from here on, so the scan needs no error handling of its own.
  const entryOrder = new Map();
  let order = [];
  // One frame per open object or array: { keys: Set | null (arrays), list, path }.
  const stack = [];
  let pendingKey = null;   // the key just read, naming the value that follows it
  let expectKey = false;   // inside an object, after '{' or ','
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      const top = stack[stack.length - 1];
      if (expectKey) {
        const key = JSON.parse(text.slice(i, j + 1));
        const path = top.path;
        if (top.keys.has(key)) throw headerError(`duplicate key ${JSON.stringify(key)} ${place(path)}`, key);
        top.keys.add(key);
        top.list.push(key);
        pendingKey = key;
        expectKey = false;
      }
      i = j;
    } else if (c === '{' || c === '[') {
      const parent = stack[stack.length - 1];
      const path = parent ? [...parent.path, parent.keys ? pendingKey : '[]'] : [];
      stack.push({ keys: c === '{' ? new Set() : null, list: [], path });
      expectKey = c === '{';
    } else if (c === '}' || c === ']') {
      const frame = stack.pop();
      if (frame.keys && frame.path.length === 0) order = frame.list;
      if (frame.keys && frame.path.length === 1) entryOrder.set(frame.path[0], frame.list);
      expectKey = false;
    } else if (c === ',') {
      expectKey = stack[stack.length - 1].keys !== null;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i;
      while (j < text.length && /[-+.eE0-9]/.test(text[j])) j++;
      const number = text.slice(i, j);
      if (!INTEGER.test(number)) {
        throw headerError(`number ${number} ${place(stack[stack.length - 1].path)}: expected a non-negative integer written in digits`, number);
      }
      i = j - 1;
    }
  }
  return { value, order, entryOrder };
}
