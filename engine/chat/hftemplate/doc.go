// Package hftemplate renders a Hugging Face model's own chat template (the Jinja chat_template of its
// tokenizer_config.json) exactly as transformers' apply_chat_template does, and marks the assistant
// output of a rendered conversation for training.
//
// Rendering uses github.com/nikolalohinski/gonja/v2 in an environment that reproduces the one
// transformers builds (trim_blocks, lstrip_blocks, loop controls, {% generation %}, its tojson with
// ensure_ascii=False and dict key order, raise_exception, strftime_now, an immutable sandbox without
// include/import). Where gonja's builtins differ from Python (string methods, dict order, range) this
// package registers its own through gonja's extension points; gonja itself is used unmodified. Where
// gonja's parser accepts less than Jinja's (a conditional expression inside parentheses, which Gemma 3's
// template writes), the template source is rewritten into an equivalent one before parsing (condexpr.go).
// testdata/gen_fixtures.py renders a corpus of conversations with Debian's python3-jinja2 and the Go
// tests demand byte-identical output for the Qwen3, Qwen2.5, Llama 3 (original and guarded), Llama 3.1,
// Llama 3.2, SmolLM2, Gemma 3 and DeepSeek V3 templates.
//
// Messages are chat.Message values, turned into the dicts HF templates expect (see values.go): tool-call
// arguments become parsed JSON objects, "developer" becomes "system", optional keys appear only when
// set. Templates are parsed once and cached by source; a Template is safe for concurrent use.
//
// Errors: ErrInvalidInput (the request's messages or tools cannot be rendered: HTTP 422), ErrTemplate
// (the template fails on this conversation; *RaisedError when it called raise_exception, whose Message is
// meant for the caller), ErrMask (RenderTraining cannot locate a trainable turn with certainty; the
// message names what the template does that prevents it).
//
// Known differences from Python's Jinja that the committed templates do not meet: printing none gives
// "" instead of "None", "x is defined" is false for a variable set to none, a string is indexed by byte
// (s[i]) and a list cannot be indexed with -len(list). A template relying on them renders differently.
package hftemplate
