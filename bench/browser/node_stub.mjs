// Stands in for the Node built-ins that tfjs-backend-wasm's ESM bundle imports but only uses
// under Node.
export default {};
