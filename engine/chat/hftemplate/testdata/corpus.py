"""The parity corpus: OpenAI-shaped conversations (tool-call arguments as JSON text, as clients send
them) built from fixed parts by a seeded generator, so regenerating gives the same file."""

import json
import random

SYSTEMS = [
    "You are a helpful assistant.",
    "  Réponds en français, s'il te plaît.  \n",
    "Tu es 小助手. 回答要简洁。",
    "Be terse.\nNever apologise.\n\nUse metric units.",
    "",
    "You answer with JSON only: {\"answer\": ...}",
]

QUESTIONS = [
    "What's the weather in Paris?",
    "Wie spät ist es in Zürich? 🕰️",
    "Compute 12*(3+4).",
    "Tell me a joke about \"quotes\" and back\\slashes.",
    "  leading and trailing spaces  ",
    "多行\n文本\n测试",
    "emoji 🚀🔥 and RTL مرحبا بالعالم",
    "What does {{ raw }} mean in Jinja? And {% this %}?",
    "<tool_response>not really a tool response</tool_response>",
    "tab\tseparated\tvalues and a NUL-free control \x07 bell",
    "Summarise: «Ça va?» — “smart quotes” and ‘single’ ones.",
    "\n\nStarts with newlines",
]

ANSWERS = [
    "It's 18 °C and sunny in Paris.",
    "Es ist 14:05 Uhr in Zürich.",
    "12*(3+4) = 84.",
    "Why did the \"quote\" cross the road? To escape\\ itself.",
    "Sure.",
    "好的，明白了。",
    "🚀 Done!\n\n- item one\n- item two",
    "In Jinja, {{ raw }} prints a variable and {% this %} is a statement.",
    "",
    "  padded answer with spaces  \n",
]

REASONING = [
    "The user wants the weather. I should call the tool.",
    "Let me think step by step.\n12*(3+4) = 12*7 = 84.",
    "\nUnicode reasoning: 思考中… ✓\n",
]

TOOLS = {
    "get_weather": {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            },
        },
    },
    "search": {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web. Returns the top results as JSON.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "top_k": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
                    "safe": {"type": "boolean"},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    },
    "create_event": {
        "type": "function",
        "function": {
            "name": "create_event",
            "description": "Créer un événement — dates ISO 8601, participants optionnels.",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "when": {
                        "type": "object",
                        "properties": {"start": {"type": "string"}, "end": {"type": "string"}},
                        "required": ["start"],
                    },
                    "attendees": {"type": "array", "items": {"type": "string"}},
                    "priority": {"type": ["integer", "null"]},
                },
                "required": ["title", "when"],
            },
        },
    },
    "calculator": {
        "type": "function",
        "function": {
            "name": "calculator",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string", "description": "e.g. \"2 + 2\" or 'x < 3 & y > 1'"}},
                "required": ["expression"],
            },
        },
    },
    "ping": {
        "type": "function",
        "function": {"name": "ping", "description": "No arguments.", "parameters": {"type": "object", "properties": {}}},
    },
}

# name -> list of (arguments JSON text, tool result text)
CALLS = {
    "get_weather": [
        ('{"city": "Paris"}', '{"temperature": 18, "condition": "sunny"}'),
        ('{"city":"São Paulo","unit":"fahrenheit"}', '{"temperature": 77.5, "condition": "cloudy ☁️"}'),
        ('{\n  "unit": "celsius",\n  "city": "東京"\n}', "Temperature: 21.0 C"),
    ],
    "search": [
        ('{"query": "jinja2 trim_blocks", "top_k": 2, "safe": true}', '[{"title": "Whitespace Control", "url": "https://example.org/wc"}]'),
        ('{"query": "größte Stadt", "top_k": 1e1}', "no results"),
        ('{"query": "big numbers", "top_k": 12345678901234567890}', '{"values": [1.5, -0.0, 1e-7, 2.50]}'),
    ],
    "create_event": [
        ('{"title": "Réunion", "when": {"start": "2026-11-23T10:00", "end": null}, "attendees": ["ana", "李雷"], "priority": null}', '{"id": 42, "ok": true}'),
        ('{"title": "Stand-up \\"daily\\"", "when": {"start": "2026-11-24T09:00"}, "attendees": []}', "created"),
    ],
    "calculator": [
        ('{"expression": "12*(3+4)"}', "84"),
        ('{"expression": "1/3"}', "0.3333333333333333"),
        ('{"expression": "x < 3 & y > 1"}', "error: unknown variable x"),
        ('{"expression": "tab\\there\\u0001 \\u2028 \\ud83d\\ude00 <&> \\\\"}', "NaN"),
    ],
    "ping": [
        ("{}", "pong"),
        ("", ""),
    ],
}


class Builder:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.n = 0

    def pick(self, xs):
        return xs[self.r.randrange(len(xs))]

    def call_id(self):
        self.n += 1
        return f"call_{self.n:03d}"

    def tool_calls(self, names):
        calls, results = [], []
        for name in names:
            args, result = self.pick(CALLS[name])
            cid = self.call_id()
            calls.append({"id": cid, "type": "function", "function": {"name": name, "arguments": args}})
            results.append({"role": "tool", "tool_call_id": cid, "name": name, "content": result})
        return calls, results


def conversation(b, *, system, turns, tools, gen, kwargs=None):
    msgs = []
    if system is not None:
        msgs.append({"role": "system", "content": system})
    msgs.extend(turns)
    case = {"messages": msgs, "add_generation_prompt": gen}
    if tools:
        case["tools"] = [TOOLS[t] for t in tools]
    if kwargs:
        case["kwargs"] = kwargs
    return case


def plain_cases(b):
    cases = []
    for i in range(14):
        system = None if i % 3 == 0 else b.pick(SYSTEMS)
        turns = []
        for _ in range(1 + i % 4):
            turns.append({"role": "user", "content": b.pick(QUESTIONS)})
            turns.append({"role": "assistant", "content": b.pick(ANSWERS)})
        gen = i % 2 == 0
        if gen:
            turns.append({"role": "user", "content": b.pick(QUESTIONS)})
        cases.append(("plain", conversation(b, system=system, turns=turns, tools=None, gen=gen)))
    return cases


def tool_cases(b):
    cases = []
    names = list(TOOLS)
    for i in range(22):
        offered = sorted(b.r.sample(names, 1 + i % 3), key=names.index)
        system = b.pick(SYSTEMS) if i % 4 else None
        turns = [{"role": "user", "content": b.pick(QUESTIONS)}]
        called = [b.pick(offered) for _ in range(1 + (i % 5 == 4) + (i % 7 == 6))]
        calls, results = b.tool_calls(called)
        content = b.pick(["", "", "Let me check.", "I'll call a tool.\n"])
        turns.append({"role": "assistant", "content": content, "tool_calls": calls})
        turns.extend(results)
        if i % 3 == 0:
            gen = True  # the model is about to answer from the tool results
        else:
            turns.append({"role": "assistant", "content": b.pick(ANSWERS)})
            gen = i % 3 == 2
            if gen:
                turns.append({"role": "user", "content": b.pick(QUESTIONS)})
        cases.append(("tools", conversation(b, system=system, turns=turns, tools=offered, gen=gen)))
    return cases


def multistep_cases(b):
    cases = []
    for i in range(8):
        offered = ["get_weather", "search", "calculator"]
        turns = [{"role": "user", "content": b.pick(QUESTIONS)}]
        for _ in range(2 + i % 2):
            calls, results = b.tool_calls([b.pick(offered)])
            turns.append({"role": "assistant", "content": "", "tool_calls": calls})
            turns.extend(results)
        turns.append({"role": "assistant", "content": b.pick(ANSWERS)})
        turns.append({"role": "user", "content": b.pick(QUESTIONS)})
        if i % 2:
            calls, results = b.tool_calls(["calculator"])
            turns.append({"role": "assistant", "content": "Checking again.", "tool_calls": calls})
            turns.extend(results)
        cases.append(("multistep", conversation(b, system=b.pick(SYSTEMS), turns=turns, tools=offered, gen=i % 2 == 1)))
    return cases


def reasoning_cases(b):
    cases = []
    for i in range(12):
        turns = []
        for t in range(1 + i % 3):
            turns.append({"role": "user", "content": b.pick(QUESTIONS)})
            msg = {"role": "assistant", "content": b.pick(ANSWERS)}
            style = (i + t) % 3
            if style == 0:
                msg["reasoning_content"] = b.pick(REASONING)
            elif style == 1:
                msg["content"] = "<think>\n" + b.pick(REASONING) + "\n</think>\n\n" + msg["content"]
            turns.append(msg)
        if i % 4 == 1:
            calls, results = b.tool_calls(["get_weather"])
            turns.append({"role": "user", "content": "And the weather?"})
            turns.append({"role": "assistant", "content": "", "reasoning_content": b.pick(REASONING), "tool_calls": calls})
            turns.extend(results)
            turns.append({"role": "assistant", "content": b.pick(ANSWERS), "reasoning_content": b.pick(REASONING)})
        gen = i % 2 == 0
        kwargs = None
        if gen:
            turns.append({"role": "user", "content": b.pick(QUESTIONS)})
            kwargs = [None, {"enable_thinking": False}, {"enable_thinking": True}][i % 3]
        tools = ["get_weather"] if i % 4 == 1 else None
        cases.append(("reasoning", conversation(b, system=b.pick(SYSTEMS + [None]), turns=turns, tools=tools, gen=gen, kwargs=kwargs)))
    return cases


def edge_cases(b):
    w = TOOLS["get_weather"]
    cases = [
        ("edge", conversation(b, system=None, turns=[{"role": "user", "content": ""}], tools=None, gen=True)),
        ("edge", conversation(b, system="Only a system prompt.", turns=[], tools=None, gen=True)),
        ("edge", conversation(b, system=None, turns=[{"role": "developer", "content": "Developer says: be brief."}, {"role": "user", "content": "Hi"}], tools=None, gen=True)),
        ("edge", conversation(b, system="sys", turns=[{"role": "user", "content": "Hi"}, {"role": "system", "content": "A second system message."}, {"role": "user", "content": "Still there?"}], tools=None, gen=True)),
        ("edge", conversation(b, system=None, turns=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": None}], tools=None, gen=False)),
        ("edge", conversation(b, system=None, turns=[{"role": "user", "content": "Run it"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "call_x", "type": "function", "function": {"name": "ping", "arguments": "{}"}}]}, {"role": "ipython", "content": "pong"}], tools=["ping"], gen=True)),
        ("edge", conversation(b, system=None, turns=[{"role": "user", "content": "Hi"}], tools=None, gen=False)),
        ("edge", {"messages": [{"role": "user", "content": "tools but no system"}], "tools": [w], "add_generation_prompt": True}),
        ("edge", conversation(b, system=None, turns=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], tools=None, gen=True, kwargs={"enable_thinking": False})),
    ]
    return cases


def build_corpus():
    b = Builder(20261122)
    out = []
    for group in (plain_cases, tool_cases, multistep_cases, reasoning_cases, edge_cases):
        for i, (kind, case) in enumerate(group(b)):
            out.append({"name": f"{kind}-{i:02d}", **case})
    return out


if __name__ == "__main__":
    print(json.dumps(build_corpus(), ensure_ascii=False, indent=1))
