// Package serving answers chat completions from base models and trained checkpoints, without HTTP: it
// resolves the requested model name against the account's models (every request reads the newest checkpoint
// row, so a checkpoint is servable as soon as it is recorded), keeps loaded LoRA adapters in a byte-bounded
// LRU cache (reloaded from the blob store on a miss, concurrent misses loading once), bounds concurrent
// generations, constrains sampling for response_format and tool_choice, and turns the engine's sampled
// tokens into OpenAI choices, or into per-token deltas for streaming.
//
// Data flow: api → Service.Start (admit, resolve, load adapter, render prompt) → Generation.Run
// (engine.Sampler.Sample, which batches the decoding of concurrent requests on the same model) → choices.
// No workflow sits on this path. README.md documents the behaviour and its guarantees.
package serving
