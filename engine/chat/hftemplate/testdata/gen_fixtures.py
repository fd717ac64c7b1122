#!/usr/bin/env python3
"""Reference renderings of the committed chat templates, for the Go parity test.

Builds a fixed corpus of OpenAI-shaped conversations (corpus.json) and renders
each one with every template under testdata/models/ through the environment
Hugging Face transformers uses in apply_chat_template: an
ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the
loopcontrols extension, a no-op {% generation %} tag, its own tojson filter
(ensure_ascii=False, keys in insertion order), raise_exception and
strftime_now (here with a fixed clock so the outputs are reproducible).
Results go to expected/<model>.json.

Run with Debian's python3-jinja2 (`make hftemplate-fixtures` installs it):
    /usr/bin/python3 engine/chat/hftemplate/testdata/gen_fixtures.py
"""

import datetime
import json
import os
import sys

sys.dont_write_bytecode = True  # keep testdata free of __pycache__

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

from corpus import build_corpus  # noqa: E402
from snippets import SNIPPETS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
# The clock strftime_now reads; the Go test injects the same instant.
FIXED_NOW = datetime.datetime(2026, 11, 22, 9, 30, 5)


class GenerationTag(jinja2.ext.Extension):
    """{% generation %}...{% endgeneration %} renders its body, as HF's AssistantTracker does when it
    is not asked for an assistant mask."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.Scope(body, lineno=lineno)


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return FIXED_NOW.strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def token_text(tok):
    """bos_token/eos_token are strings or AddedToken dicts in tokenizer_config.json."""
    if isinstance(tok, dict):
        return tok.get("content")
    return tok


def canonical_message(m):
    """The message dict the template sees; the Go package builds the same one (see values.go)."""
    role = m["role"]
    if role == "developer":
        role = "system"
    out = {"role": role, "content": m.get("content") or ""}
    if m.get("reasoning_content"):
        out["reasoning_content"] = m["reasoning_content"]
    calls = m.get("tool_calls") or []
    if calls:
        out["tool_calls"] = []
        for c in calls:
            call = {}
            if c.get("id"):
                call["id"] = c["id"]
            call["type"] = "function"
            args = c["function"].get("arguments") or "{}"
            call["function"] = {"name": c["function"]["name"], "arguments": json.loads(args)}
            out["tool_calls"].append(call)
    if m.get("tool_call_id"):
        out["tool_call_id"] = m["tool_call_id"]
    if m.get("name"):
        out["name"] = m["name"]
    return out


def canonical_tool(t):
    f = t["function"]
    fn = {"name": f["name"]}
    if f.get("description"):
        fn["description"] = f["description"]
    if f.get("parameters") is not None:
        fn["parameters"] = f["parameters"]
    return {"type": "function", "function": fn}


def render(template, cfg, case):
    ctx = {
        "messages": [canonical_message(m) for m in case["messages"]],
        "tools": [canonical_tool(t) for t in case["tools"]] if case.get("tools") else None,
        "documents": None,
        "add_generation_prompt": case.get("add_generation_prompt", False),
    }
    for key in ("bos_token", "eos_token"):
        if token_text(cfg.get(key)):
            ctx[key] = token_text(cfg[key])
    ctx.update(case.get("kwargs") or {})
    return template.render(**ctx)


def main():
    corpus = build_corpus()
    with open(os.path.join(HERE, "corpus.json"), "w", encoding="utf-8") as fh:
        json.dump(corpus, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    env = environment()
    models_dir = os.path.join(HERE, "models")
    os.makedirs(os.path.join(HERE, "expected"), exist_ok=True)
    for model in sorted(os.listdir(models_dir)):
        with open(os.path.join(models_dir, model, "tokenizer_config.json"), encoding="utf-8") as fh:
            cfg = json.load(fh)
        template = env.from_string(cfg["chat_template"])
        results, errors = [], 0
        for case in corpus:
            try:
                results.append({"name": case["name"], "output": render(template, cfg, case)})
            except Exception as e:  # a template error is an expected result too: the Go side must fail as well
                errors += 1
                results.append({"name": case["name"], "error": f"{type(e).__name__}: {e}"})
        with open(os.path.join(HERE, "expected", model + ".json"), "w", encoding="utf-8") as fh:
            json.dump(results, fh, ensure_ascii=False, indent=1)
            fh.write("\n")
        print(f"{model}: {len(corpus) - errors} rendered, {errors} template errors (jinja2 {jinja2.__version__})")
    snippets = []
    for source, ctx in SNIPPETS:
        entry = {"template": source, "context": ctx}
        try:
            entry["output"] = env.from_string(source).render(messages=[], tools=None, documents=None, add_generation_prompt=False, **ctx)
        except Exception as e:
            entry["error"] = f"{type(e).__name__}: {e}"
        snippets.append(entry)
    with open(os.path.join(HERE, "expected", "snippets.json"), "w", encoding="utf-8") as fh:
        json.dump(snippets, fh, ensure_ascii=False, indent=1)
        fh.write("\n")
    print(f"snippets: {len(snippets)}")


if __name__ == "__main__":
    sys.exit(main())
