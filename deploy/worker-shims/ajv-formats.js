// `ajv-formats` in the Worker: see ajv.js.
export default function addFormats(ajv) {
  return ajv;
}
