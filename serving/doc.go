// Package serving answers chat completions from base models and trained checkpoints, without HTTP: it
// resolves the requested model name against the account's models (every request reads the newest checkpoint
// row, so a checkpoint is servable as soon as it is recorded), keeps loaded LoRA adapters in a byte-bounded
// LRU cache (reloaded from the blob store on a miss, concurrent misses loading once), bounds concurrent
// generations, constrains sampling for response_format and tool_choice, and turns the engine's sampled
// tokens into OpenAI choices, or into per-token deltas for streaming.
//
// Data flow: api → Service.Start (resolve, admit, load adapter, render prompt) → Generation.Run
// (engine.Base.Sample) → choices. No workflow sits on this path.
package serving
