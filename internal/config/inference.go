package config

import "time"

// Inference says where chat completions run.
type Inference struct {
	// Mode is InferenceLocal (the API samples in its own process) or
	// InferenceRemote (the API forwards to `trainyard infer` processes)
	// (TRAINYARD_INFERENCE, default local; `serve` is always local).
	Mode string
	// Heartbeat is how often an infer process renews its registry row
	// (TRAINYARD_INFER_HEARTBEAT); 0 is the inference package's default.
	// Its lease is three heartbeats.
	Heartbeat time.Duration
	// AdvertiseAddr is the host:port the API reaches an infer process at
	// (TRAINYARD_INFER_ADVERTISE_ADDR); empty means its listener's address,
	// or the host's first non-loopback address when it listens on all.
	AdvertiseAddr string
}

// Values of TRAINYARD_INFERENCE.
const (
	InferenceLocal  = "local"
	InferenceRemote = "remote"
)
