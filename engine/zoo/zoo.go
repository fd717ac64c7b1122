// Package zoo embeds the weights of the built-in base models, so a trainyard binary serves and trains them
// without downloading anything. trainyard/tiny-chat is produced by engine/pretrain (DefaultOptions) and
// committed as float32 safetensors with its config.json.
package zoo

import (
	"embed"
	"fmt"
	"sort"
)

// The directory holds config.json and model.safetensors; embedding the directory (not the files) keeps the
// build working in a tree where the weights have not been produced yet, and Open then says so.
//
//go:embed tinychat
var files embed.FS

// builtin is one built-in model: its directory in files and the learning rates its LoRA adapters train
// well at.
type builtin struct {
	dir         string
	rlLR, sftLR float64
}

// models maps a built-in model name to its files and learning rates. tiny-chat's rates are measured
// (engine/DESIGN.md's RL check, examples/rl-toy and examples/sft): a 3.3M-parameter model needs rates
// hundreds of times those of large models.
var models = map[string]builtin{"trainyard/tiny-chat": {dir: "tinychat", rlLR: 1e-3, sftLR: 3e-3}}

// Names lists the built-in models, sorted.
func Names() []string {
	out := make([]string, 0, len(models))
	for n := range models {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Open returns a built-in model's config.json and model.safetensors bytes.
func Open(name string) (configJSON, weights []byte, err error) {
	m, ok := models[name]
	if !ok {
		return nil, nil, fmt.Errorf("unknown built-in model %q (have %v)", name, Names())
	}
	dir := m.dir
	if configJSON, err = files.ReadFile(dir + "/config.json"); err != nil {
		return nil, nil, err
	}
	if weights, err = files.ReadFile(dir + "/model.safetensors"); err != nil {
		return nil, nil, fmt.Errorf("built-in model %q has no weights in this build (run `trainyard pretrain`): %w", name, err)
	}
	return configJSON, weights, nil
}

// LearningRates returns the LoRA learning rates recommended for a built-in model, for RL and for SFT; ok is
// false for a name that is not built in.
func LearningRates(name string) (rl, sft float64, ok bool) {
	m, ok := models[name]
	return m.rlLR, m.sftLR, ok
}
