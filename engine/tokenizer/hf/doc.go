// Package hf reads Hugging Face tokenizer.json files of BPE tokenizers and encodes and decodes text exactly
// as the Hugging Face tokenizers library does: byte-level ones (Qwen2/2.5/3, Llama 3, SmolLM2, GPT-2 and
// others of that shape) and SentencePiece-style ones (Gemma 3, Llama 2, Mistral: "▁" for spaces, byte
// fallback).
//
// Load reads a model directory (tokenizer.json, and tokenizer_config.json for the special tokens' roles and
// the chat template); New takes the files' contents. A Tokenizer offers:
//
//   - Encode: plain text, added tokens not recognised, so "<|im_start|>" typed by a user stays text;
//   - EncodeSpecial: added tokens cut out first, as the reference's encode(text, add_special_tokens=False)
//     does, for rendered chat templates (nothing is added at the ends: templates write their own BOS);
//   - Decode and TokenBytes: the exact bytes of tokens; one token may be part of a UTF-8 sequence;
//   - VocabSize, IsSpecial, IsAdded, TokenID, AddedTokens, and BOS, EOS, PAD and ChatTemplate from
//     tokenizer_config.json.
//
// Round trip: Decode(Encode(s)) == s and Decode(EncodeSpecial(s)) == s for every string s when the
// tokenizer has no normalizer (Llama 3, SmolLM2; invalid UTF-8 included), and for every valid UTF-8
// string already in the normalizer's form when it has one (Qwen normalizes to NFC: other text comes back
// in NFC, as with the reference). SentencePiece-style tokenizers turn spaces into "▁", so for them it
// holds for strings without "▁" (invalid UTF-8 included: such bytes are their byte-fallback tokens), and
// for Llama 2's EncodeSpecial only without added tokens in the text (its normalizer puts a "▁" in front of
// every stretch between them, and decoding strips only the first). Unlike the reference, Decode does not
// replace invalid UTF-8 with U+FFFD.
//
// Supported, as in the reference: normalizers NFC, NFD, NFKC, NFKD, Replace, Prepend and Sequence;
// pre-tokenizers Split (regex or string, all five behaviours, invert), ByteLevel (with or without its
// GPT-2 regex, add_prefix_space) last, Metaspace (replacement, prepend_scheme always/first/never, split),
// Digits and Sequence, or none; the BPE model with merges as "a b" strings or [a, b] pairs, ignore_merges,
// empty continuing_subword_prefix/end_of_word_suffix, and without ByteLevel byte_fallback ("<0xNN>"
// tokens), unk_token and fuse_unk; added tokens, special or not, with lstrip, rstrip, single_word and
// normalized; the ByteLevel decoder, or Replace, Strip and Metaspace steps, then ByteFallback, then Fuse,
// then Replace and Strip. Anything else is refused at load with a *LoadError naming the file and the JSON
// field (errors.Is(err, ErrUnsupported)), never tokenized differently. The post_processor is not applied
// (it only adds special tokens when encoding with add_special_tokens, which is not offered: Gemma's and
// Llama 2's TemplateProcessing would put <bos> or <s> in front, which their chat templates write
// themselves); truncation and padding are not applied either, as transformers does not unless asked.
//
// Exactness: the regexes of GPT-2, Llama 3 and Qwen2 run on hand-written scanners, others on regexp2; the
// character classes include the code points that the reference's newer Unicode tables add to Go's, and the
// normalizers leave alone the characters the reference's older Unicode tables do not know. Parity fixtures
// generated from the reference (testdata/, make tokenizer-fixtures) hold all of this to identical ids.
//
// Speed: the merges of each distinct piece are cached (a bounded, sharded word cache; SentencePiece-style
// text, one piece between added tokens, is cut into words where no merge can cross); a Tokenizer is safe
// for concurrent use. See bench_test.go and engine/DESIGN.md for figures.
package hf
