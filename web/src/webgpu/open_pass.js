// A command encoder whose compute pass stays open between the calls recorded into it, so that a
// batch's calls (dispatch/gpu_batch.js) share one pass rather than each beginning and ending its
// own: a step through 24 layers paid 24 passes (Dawn's beginComputePass() + end(), about 1.7 µs
// hot and 5–7 µs cold on SwiftShader's Dawn, each). Within a compute pass WebGPU orders the
// dispatches and makes each one's writes visible to the next (a usage scope is one dispatch), so
// the results are those of a pass per call, bit for bit. Work that is no dispatch (a copy, the
// caller's encode(), finish()) takes the encoder, which ends the pass first.
export class OpenPass {
  #encoder;
  #pass = null;

  constructor(encoder) {
    this.#encoder = encoder;
  }

  /** The encoder, its open pass ended (a copy, finish() or a pass of one's own may follow). */
  encoder() {
    this.#end();
    return this.#encoder;
  }

  /** The open compute pass, begun now (with `descriptor`: a timed call's timestampWrites) where none is. */
  pass(descriptor = undefined) {
    this.#pass ??= this.#encoder.beginComputePass(descriptor);
    return this.#pass;
  }

  // Ends the open pass, if any.
  #end() {
    this.#pass?.end();
    this.#pass = null;
  }
}
