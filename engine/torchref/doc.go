// Package torchref holds PyTorch reference values for engine/model and the test that compares the engine
// with them (TestTorchParity). gen.py, run by `make torch-fixtures` with Debian's python3-torch, builds tiny
// random-weight models of every supported architecture (Llama with and without llama3 rope scaling, Qwen2
// with q/k/v biases, Qwen3 with q/k norms and head_dim ≠ hidden/heads, Gemma 3 with its sliding-window and
// global layers, as Gemma3ForCausalLM and as the text model of Gemma3ForConditionalGeneration with
// soft-capping; tied and untied heads) with a LoRA
// adapter on all seven projections, writes them in Hugging Face's and PEFT's layouts under testdata/, and
// records PyTorch's logits and LoRA gradients of a cross-entropy loss, with the base in float32 and with its
// matrices rounded to bfloat16. The test needs no Python: the fixtures are committed.
package torchref
