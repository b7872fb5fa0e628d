// The PyTorch fixtures (tests/fixtures/mha_parity.json and decode_parity.json) for the Node tests: read from disk here,
// decoded by the test contract (tests/contract/), which also has the comparator and the seeded
// random tensors.
import { readFileSync } from 'node:fs';
import { decodeFixtures } from '../contract/contract.mjs';

const read = (name) => decodeFixtures(JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8')));

/** Every fixture case: PyTorch parity (mha_parity.json) and decoding (decode_parity.json). */
export const loadFixtures = () => [...read('mha_parity.json'), ...read('decode_parity.json')];
