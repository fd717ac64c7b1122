package serving

import "crypto/rand"

// NewCompletionID returns a chat completion id shaped like OpenAI's: "chatcmpl-" and 29 random characters.
func NewCompletionID() string { return randomID("chatcmpl-", 29) }

// newCallID returns a tool call id shaped like OpenAI's: "call_" and 24 random characters.
func newCallID() string { return randomID("call_", 24) }

func randomID(prefix string, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand panics rather than return an error since Go 1.24)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}
