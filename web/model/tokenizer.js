// Characters ↔ token ids: the id of a character is its index in the model's vocabulary string
// (the safetensors metadata's `vocab`, README.md). A prompt character outside it is an
// OptionError naming it, since the model has no "unknown" token to fall back on.
import { OptionError } from '../src/base/errors.js';

export class Tokenizer {
  #ids;

  constructor(vocab) {
    this.vocab = Array.from(vocab);
    this.#ids = new Map(this.vocab.map((c, i) => [c, i]));
  }

  get size() {
    return this.vocab.length;
  }

  encode(text) {
    return Array.from(text, (c, at) => {
      const id = this.#ids.get(c);
      if (id === undefined) {
        throw new OptionError(`prompt: character ${JSON.stringify(c)} at ${at} is not in the model's vocabulary`, {
          argument: 'prompt', expected: `characters of ${JSON.stringify(this.vocab.join(''))}`, actual: JSON.stringify(c),
        });
      }
      return id;
    });
  }

  /** `ids` as a forward() takes them: a non-empty array of token ids; else an OptionError naming `ids`. */
  checkIds(ids) {
    const bad = Array.isArray(ids) ? ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= this.size) : -1;
    if (!Array.isArray(ids) || ids.length === 0 || bad >= 0) {
      const actual = !Array.isArray(ids) ? typeof ids : ids.length === 0 ? 'an empty array' : `${String(ids[bad])} at ${bad}`;
      throw new OptionError(`ids: expected a non-empty array of token ids in [0, ${this.size}), got ${actual}`, {
        argument: 'ids', expected: `integers in [0, ${this.size})`, actual,
      });
    }
    return ids;
  }

  decode(ids) {
    return Array.from(ids, (id) => this.vocab[id]).join('');
  }
}
