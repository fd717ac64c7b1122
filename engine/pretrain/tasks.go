package pretrain

import (
	"fmt"
	"math/rand"
	"strings"

	"github.com/trainyard/trainyard/engine/chat"
)

// exchange is one user request and the assistant reply.
type exchange struct{ user, assistant string }

// noisy reports true with probability p; the imperfect tasks use it to emit a wrong or off-spec answer,
// so the base model is right only part of the time and RL with a programmatic reward has room to improve.
func noisy(r *rand.Rand, p float64) bool { return r.Float64() < p }

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

// arithmetic: "What is 7+5?" → "12". About 35% of answers are off by a little (the deliberate noise).
func arithmetic(r *rand.Rand) exchange {
	var a, b, ans int
	var op, word string
	switch r.Intn(3) {
	case 0:
		a, b, op, word = r.Intn(51), r.Intn(51), "+", "plus"
		ans = a + b
	case 1:
		a = r.Intn(51)
		b = r.Intn(a + 1)
		op, word, ans = "-", "minus", a-b
	default:
		a, b, op, word = r.Intn(13), r.Intn(13), "*", "times"
		ans = a * b
	}
	forms := []string{"What is %d%s%d?", "What is %d %s %d?", "Compute %d%s%d.", "%d%s%d=?", "Calculate %d %s %d."}
	q := fmt.Sprintf(pick(r, forms), a, op, b)
	if r.Intn(5) == 0 {
		q = fmt.Sprintf("What is %d %s %d?", a, word, b)
	}
	if noisy(r, 0.35) {
		ans += pick(r, []int{-10, -2, -1, 1, 1, 2, 10})
		if ans < 0 {
			ans = -ans
		}
	}
	return exchange{q, fmt.Sprint(ans)}
}

// digitArithmetic: single-digit operands ("What is 7+5?" → "12"), the RL demo's task; 40% of the answers
// are off by a little, so the base model samples the right one only about half of the time.
func digitArithmetic(r *rand.Rand) exchange {
	q, ans := DigitQuestion(r)
	if noisy(r, 0.4) {
		ans += pick(r, []int{-2, -1, 1, 1, 2, 10})
		if ans < 0 {
			ans = -ans
		}
	}
	return exchange{q, fmt.Sprint(ans)}
}

// DigitQuestion draws a single-digit arithmetic question and its correct answer.
func DigitQuestion(r *rand.Rand) (string, int) {
	a, b := r.Intn(10), r.Intn(10)
	switch r.Intn(3) {
	case 0:
		return fmt.Sprintf(pick(r, []string{"What is %d+%d?", "What is %d + %d?", "Compute %d+%d."}), a, b), a + b
	case 1:
		a, b = max(a, b), min(a, b)
		return fmt.Sprintf(pick(r, []string{"What is %d-%d?", "What is %d - %d?", "Compute %d-%d."}), a, b), a - b
	}
	return fmt.Sprintf(pick(r, []string{"What is %d*%d?", "What is %d times %d?", "Compute %d*%d."}), a, b), a * b
}

// instruction: tasks with a checkable property; the property holds in about half of the replies.
func instruction(r *rand.Rand) exchange {
	switch r.Intn(7) {
	case 0:
		letter := pick(r, commonWords)[0]
		w := pick(r, commonWords)
		if !noisy(r, 0.5) {
			w = wordStarting(r, letter)
		}
		return exchange{fmt.Sprintf(pick(r, []string{"Say a word that starts with %c.", "Give me a word starting with %c.", "Name a word that begins with %c."}), letter), w}
	case 1:
		q, a := fact(r)
		if !noisy(r, 0.5) {
			a = strings.ToUpper(a)
		}
		return exchange{pick(r, []string{"Answer in uppercase: ", "Reply in capital letters. "}) + q, a}
	case 2:
		topic := pick(r, nouns)
		n := 3
		if noisy(r, 0.5) {
			n = pick(r, []int{2, 4, 5})
		}
		words := make([]string, n)
		for i := range words {
			words[i] = pick(r, adjective)
		}
		words[n-1] = topic
		return exchange{fmt.Sprintf(pick(r, []string{"Reply with exactly three words: describe a %s.", "Describe a %s in exactly three words."}), topic),
			capitalize(strings.Join(words, " ")) + "."}
	case 3:
		kind, list := pick(r, []string{"animal", "color", "fruit"}), animals
		if kind == "color" {
			list = colors
		} else if kind == "fruit" {
			list = fruits
		}
		return exchange{fmt.Sprintf("Name a %s.", kind), capitalize(pick(r, list)) + "."}
	case 4:
		s := sentence(r)
		return exchange{"Repeat after me: " + s, s}
	case 5:
		n := 2 + r.Intn(8)
		nums := make([]string, n)
		for i := range nums {
			nums[i] = fmt.Sprint(i + 1)
		}
		return exchange{fmt.Sprintf("Count from 1 to %d.", n), strings.Join(nums, ", ")}
	default:
		q, a := fact(r)
		if !noisy(r, 0.5) {
			a = strings.ToLower(a)
		}
		return exchange{"Answer in lowercase: " + q, a}
	}
}

func wordStarting(r *rand.Rand, c byte) string {
	var ws []string
	for _, w := range commonWords {
		if w[0] == c {
			ws = append(ws, w)
		}
	}
	return pick(r, ws)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func sentence(r *rand.Rand) string {
	return capitalize(fmt.Sprintf("the %s %s is %s", pick(r, adjective), pick(r, nouns), pick(r, adjective))) + "."
}

// fact returns a short factual question and its answer sentence.
func fact(r *rand.Rand) (string, string) {
	switch r.Intn(6) {
	case 0:
		c := pick(r, capitals)
		return fmt.Sprintf("What is the capital of %s?", c[0]), fmt.Sprintf("The capital of %s is %s.", c[0], c[1])
	case 1:
		s := pick(r, animalSounds)
		return fmt.Sprintf("What does a %s say?", s[0]), fmt.Sprintf("A %s says %s.", s[0], s[1])
	case 2:
		c := pick(r, thingColors)
		return fmt.Sprintf("What color is %s?", c[0]), fmt.Sprintf("%s is %s.", capitalize(c[0]), c[1])
	case 3:
		o := pick(r, opposites)
		return fmt.Sprintf("What is the opposite of %s?", o[0]), fmt.Sprintf("The opposite of %s is %s.", o[0], o[1])
	case 4:
		l := pick(r, legs)
		return fmt.Sprintf("How many legs does a %s have?", l[0]), fmt.Sprintf("A %s has %s legs.", l[0], l[1])
	default:
		i := r.Intn(7)
		return fmt.Sprintf("What day comes after %s?", weekdays[i]), fmt.Sprintf("%s comes after %s.", weekdays[(i+1)%7], weekdays[i])
	}
}

// smallTalk covers greetings, identity and facts.
func smallTalk(r *rand.Rand) exchange {
	talk := [][2][]string{
		{{"Hello!", "Hi!", "Hello", "Hi there.", "Good morning!"}, {"Hello! How can I help you today?", "Hi! What can I do for you?"}},
		{{"How are you?", "How are you doing?"}, {"I'm doing well, thank you! How can I help?", "I am fine, thanks for asking."}},
		{{"What is your name?", "Who are you?"}, {"I am Tiny Chat, a small language model trained by trainyard."}},
		{{"Thank you!", "Thanks.", "Thanks a lot!"}, {"You're welcome!", "Happy to help!"}},
		{{"Goodbye!", "Bye.", "See you later."}, {"Goodbye! Have a nice day.", "Bye! Take care."}},
		{{"What can you do?", "How can you help me?"}, {"I can answer simple questions, do small sums and call tools when you give me some."}},
	}
	if r.Intn(2) == 0 {
		q, a := fact(r)
		return exchange{q, a}
	}
	t := pick(r, talk)
	return exchange{pick(r, t[0]), pick(r, t[1])}
}

// conversation wraps exchanges in messages, with an optional system prompt.
func conversation(r *rand.Rand, xs ...exchange) []chat.Message {
	var msgs []chat.Message
	if r.Intn(10) < 3 {
		msgs = append(msgs, chat.Message{Role: "system", Content: pick(r, systemPrompts)})
	}
	for _, x := range xs {
		msgs = append(msgs, chat.Message{Role: "user", Content: x.user},
			chat.Message{Role: "assistant", Content: x.assistant, Trainable: true})
	}
	return msgs
}
