// The GPUDevices this package's modules compute on (each WebGpuExecutor adds its own). GpuBatch's
// encode() takes only one of them: an identity test, which no Proxy of a device or look-alike
// passes, since npm webgpu can crash the process on a call with an impostor where a browser throws.
const devices = new WeakSet();

export const addModuleDevice = (device) => devices.add(device);
export const isModuleDevice = (device) => devices.has(device);
