// configure(): the package's settings. wasmPaths is one-time (given before the first module
// loads): where the browser loader fetches the package's files from (browser_files.js), a base
// URL (the folder the package's web/dist/ files are served from, like onnxruntime-web's
// env.wasm.wasmPaths) or a map from file name to URL; Node reads the installed files and ignores
// it, so that code shared with a server-side render runs there unchanged. gpuKernels pins WebGPU
// kernel variants (webgpu/selection/gpu_kernel_pins.js) and may change at any time.
import { MODULES } from '../../dist/modules.js';
import { OptionError, describe } from '../base/errors.js';
import { moduleFiles } from '../wasm/module_files.js';
import { checkGpuKernels, pinGpuKernels } from '../webgpu/selection/gpu_kernel_pins.js';

const OPTIONS = ['wasmPaths', 'gpuKernels'];
/**
 * Every file name a wasmPaths map may name: the files of web/modules.json's modules the browser
 * fetches (not the pthreads worker script: its text is embedded in the package).
 */
const FILE_NAMES = MODULES.flatMap((m) => Object.entries(moduleFiles(m)).filter(([kind]) => kind !== 'threadWorker').map(([, file]) => file));

let settings = { wasmPaths: null };
let locked = false;  // set once a module has loaded: its files were fetched already

function checkWasmPaths(value) {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string' && value !== '') return value;
  const isMap = typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype;
  if (isMap && Object.values(value).every((url) => typeof url === 'string' && url !== '')) {
    const unknown = Object.keys(value).find((name) => !FILE_NAMES.includes(name));
    if (unknown !== undefined) {
      throw new OptionError(`configure: wasmPaths: unknown file '${unknown}'; expected one of ${FILE_NAMES.join(', ')}`, {
        argument: 'wasmPaths', expected: FILE_NAMES, actual: unknown,
      });
    }
    return { ...value };
  }
  throw new OptionError('configure: wasmPaths: expected a base URL string or an object { [file name]: URL string }, '
    + `got ${describe(value)}`, { argument: 'wasmPaths', expected: 'string | { [file: string]: string }', actual: describe(value) });
}

/**
 * configure({ wasmPaths, gpuKernels }): wasmPaths before the first create() or call (OptionError
 * after, unless unchanged); gpuKernels whenever (it applies to the calls that follow).
 */
export function configure(options) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new OptionError(`configure: expected an options object, got ${describe(options)}`, {
      argument: 'configure', expected: 'object', actual: describe(options),
    });
  }
  const unknown = Object.keys(options).find((key) => !OPTIONS.includes(key));
  if (unknown !== undefined) {
    throw new OptionError(`configure: unknown option '${unknown}'; expected one of ${OPTIONS.join(', ')}`, {
      argument: unknown, expected: OPTIONS, actual: unknown,
    });
  }
  const pins = 'gpuKernels' in options ? checkGpuKernels(options.gpuKernels) : undefined;
  if (!('wasmPaths' in options) && pins !== undefined) {
    pinGpuKernels(pins);
    return;
  }
  const next = { wasmPaths: checkWasmPaths(options.wasmPaths) };
  if (locked && JSON.stringify(next) !== JSON.stringify(settings)) {
    throw new OptionError('configure: call it before the first create() or call; the WASM module is loaded already '
      + '(its files were fetched with the settings of that time)', {
      argument: 'configure', expected: 'a call before the WASM module loads', actual: 'called after it loaded',
    });
  }
  settings = next;
  if (pins !== undefined) pinGpuKernels(pins);
}

/** The wasmPaths setting: null, a base URL string or { [file name]: URL }. */
export const wasmPaths = () => settings.wasmPaths;

/** Called once a module has loaded (runtime.js): later changes could not apply. */
export function lockSettings() {
  locked = true;
}
