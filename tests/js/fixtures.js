// The PyTorch fixtures (tests/fixtures/mha_parity.json) for the Node tests: read from disk here,
// decoded by the test contract (tests/contract/), which also has the comparator and the seeded
// random tensors.
import { readFileSync } from 'node:fs';
import { decodeFixtures } from '../contract/contract.mjs';

export const loadFixtures = () =>
  decodeFixtures(JSON.parse(readFileSync(new URL('../fixtures/mha_parity.json', import.meta.url), 'utf8')));
