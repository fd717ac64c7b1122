// Package jobspec is the one parser of training-job requests: RL and SFT
// settings with their ranges, training data URLs and artifact references,
// SFT data lines, sampled token names, and the documents a job's input is
// stored as. The API validates requests with it and the activities train by
// it, so a request the API accepts is one training accepts. It imports only
// the standard library and the vocabulary of the root package.
package jobspec
