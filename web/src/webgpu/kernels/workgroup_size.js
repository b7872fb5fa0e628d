// A workgroup size sized to a kernel's row of work, for the kernels whose one workgroup takes one
// row and loops over it (the cache append, the NaN rule's rows): as many invocations as the row
// has values, as a power of two from 64 to 256 (WebGPU's guaranteed most). Why not always 256: a
// GPU runs the idle invocations of a narrow row for nothing but their barriers, and SwiftShader
// runs every invocation on the CPU, where 256 for rows of 32 values made the WebGPU test suite
// about a quarter slower in these kernels' tests; a wide row (a decode step of E 2048) gets 256,
// so that it takes few rounds of reads.
export const rowWorkgroup = (values) => Math.min(256, Math.max(64, 2 ** Math.ceil(Math.log2(Math.max(1, values)))));
