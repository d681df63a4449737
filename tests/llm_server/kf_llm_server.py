#!/usr/bin/env python3
"""A scripted loopback LLM server for tests: OpenAI chat completions and Anthropic messages.

Usage: kf_llm_server.py --script SCRIPT.json --port-file F [--log LOG.jsonl] [--port 0]

The script is {"responses": [R, ...], "default": R}. Each request takes the first response not yet
consumed whose filters ("purpose", "job", "trial", "branch" against the X-KernelFoundry-Call
header; "format": "openai" | "anthropic"; "prompt_contains": a string, or a list of strings, that
the request's system and user text must all contain) match it, else "default", else HTTP 500. With
"log_prompts": true in the script, each log line also holds the request's text ("prompt_text").
R: {"content": "..."} | {"fault": "rate_limit", "retry_after": 1} | {"fault": "server_error"} |
   {"fault": "hang", "seconds": N, "content"?: "..."} | {"fault": "truncated", "content": "..."} |
   {"fault": "malformed"}; any R may carry "delay_s", and server_error "status" and "message"
   (the error body's text, e.g. a provider echoing what it was sent).
Each request is logged with whether a key came ("has_auth"), the header that carried it
("auth_header": "Authorization" | "x-api-key" | null) and the SHA-256 of the key ("auth_sha256"),
never the key itself.
For an OpenAI request with n > 1, choices after the first take further matching plain-content
responses while there are any, else repeat the first content.

The real APIs' rules, as their servers enforce them (400 with the provider's error shape):
- "reasoning_models": [model, ...] in the script: for those models (as OpenAI's o-series and
  GPT-5) `max_tokens`, `temperature` and `top_p` are rejected with error.code
  "unsupported_parameter" and error.param naming the field; answers report
  usage.completion_tokens_details.reasoning_tokens (a response's "reasoning_tokens", default
  half the completion) and message.reasoning_content is left out.
- "legacy_models": [model, ...]: for those (an older compatible server) `max_completion_tokens`
  is rejected the same way.
- Anthropic `thinking`: {"type": "enabled", "budget_tokens" >= 1024 and < max_tokens}; with it,
  `temperature` is rejected and `top_p` below 0.95 too; the answer starts with a thinking block
  (a response's "thinking" text) before the text block.
- Prompt caching: OpenAI caches by itself: usage.prompt_tokens_details.cached_tokens is the
  longest prefix (in tokens, chars / 4, in steps of 128) shared with an earlier prompt of the
  same model, once the prompt has "cache_min_tokens" (script key, default 1024). Anthropic caches
  the prompt up to the last block marked cache_control {"type": "ephemeral"} (at least
  cache_min_tokens): usage.cache_creation_input_tokens the first time, cache_read_input_tokens
  after; input_tokens counts only the rest. A response's "cached_tokens" overrides OpenAI's.
R may also be {"fault": "refused", "content"?: "..."}: OpenAI finish_reason "content_filter",
Anthropic stop_reason "refusal".
Python 3.11 standard library only.
"""

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

FORMAT_BY_PATH = {
    "/v1/chat/completions": "openai",
    "/chat/completions": "openai",
    "/v1/messages": "anthropic",
    "/messages": "anthropic",
}
FAULTS = {"rate_limit", "server_error", "hang", "truncated", "malformed", "refused"}
FILTERS = ("purpose", "job", "trial", "branch", "format")


def approx_tokens(text):
    return max(1, len(text) // 4)


def parse_call_header(value):
    """'job=j;trial=1;branch=0;purpose=generate' -> dict of the fields."""
    fields = {}
    for part in (value or "").split(";"):
        if "=" in part:
            key, _, val = part.partition("=")
            fields[key.strip()] = val.strip()
    return fields


def text_of(content):
    """A message's content: a string, or a list of blocks with "text"."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


class Script:
    """The scripted responses; consumption is shared by all request threads."""

    def __init__(self, data):
        if not isinstance(data, dict) or not isinstance(data.get("responses", []), list):
            raise ValueError('the script must be {"responses": [...], "default": {...}}')
        self.responses = list(data.get("responses", []))
        self.default = data.get("default")
        self.log_prompts = bool(data.get("log_prompts", False))
        self.reasoning_models = set(data.get("reasoning_models", []))
        self.legacy_models = set(data.get("legacy_models", []))
        self.cache_min_tokens = int(data.get("cache_min_tokens", 1024))
        # Prompt caches: the prompts (OpenAI, by model) and prefixes (Anthropic) seen so far.
        self.openai_prompts = {}
        self.anthropic_prefixes = set()
        for r in self.responses + ([self.default] if self.default is not None else []):
            if not isinstance(r, dict):
                raise ValueError("each response must be an object, got %r" % (r,))
            if "fault" in r and r["fault"] not in FAULTS:
                raise ValueError("unknown fault %r (known: %s)" % (r["fault"], sorted(FAULTS)))
        self.used = [False] * len(self.responses)
        self.lock = threading.Lock()

    @staticmethod
    def matches(response, fmt, call, text):
        for key in FILTERS:
            if key not in response:
                continue
            have = fmt if key == "format" else call.get(key)
            if str(response[key]) != have:
                return False
        wanted = response.get("prompt_contains", [])
        for part in [wanted] if isinstance(wanted, str) else wanted:
            if part not in text:
                return False
        return True

    def take(self, fmt, call, text="", plain_only=False):
        """The next matching response (marked consumed), the default, or None."""
        with self.lock:
            for i, r in enumerate(self.responses):
                if self.used[i] or not self.matches(r, fmt, call, text):
                    continue
                if plain_only and "fault" in r:
                    return None
                self.used[i] = True
                return r
        return None if plain_only else self.default


class Handler(BaseHTTPRequestHandler):
    server_version = "kf-llm-server/1"

    def log_message(self, format, *args):  # keep stderr quiet
        pass

    def do_GET(self):
        self.send_json(404, {"error": "only POST is served"}, fmt=None, request={}, fault=None)

    def do_POST(self):
        fmt = FORMAT_BY_PATH.get(self.path.split("?")[0])
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            request = json.loads(raw.decode("utf-8")) if raw else {}
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError as e:
            self.send_json(400, {"error": "request body is not JSON: %s" % e}, fmt, {}, None)
            return
        if fmt is None:
            self.send_json(404, {"error": "unknown path %s" % self.path}, fmt, request, None)
            return
        problem = self.check_request(fmt, request)
        if problem:
            if isinstance(problem, str):
                problem = {"message": problem}
            error = {"message": problem["message"], "type": "invalid_request_error"}
            if fmt == "openai":
                error["param"] = problem.get("param")
                error["code"] = problem.get("code")
                body = {"error": error}
            else:
                body = {"type": "error", "error": error}
            self.send_json(400, body, fmt, request, "rejected")
            return

        call = parse_call_header(self.headers.get("X-KernelFoundry-Call"))
        script = self.server.script
        response = script.take(fmt, call, self.request_text(request))
        if response is None:
            self.send_json(500, {"error": "script exhausted"}, fmt, request, "exhausted")
            return
        if response.get("delay_s"):
            time.sleep(float(response["delay_s"]))
        fault = response.get("fault")
        if fault == "rate_limit":
            retry_after = response.get("retry_after", 1)
            body = {"error": {"message": "rate limited (scripted)", "type": "rate_limit_error"}}
            self.send_json(429, body, fmt, request, fault, {"Retry-After": str(retry_after)})
            return
        if fault == "server_error":
            message = str(response.get("message", "internal error (scripted)"))
            body = {"error": {"message": message, "type": "server_error"}}
            self.send_json(int(response.get("status", 500)), body, fmt, request, fault)
            return
        if fault == "malformed":
            self.send_raw(200, b'{"id": "broken", "choices": [ this is not json', fmt, request,
                          fault)
            return
        if fault == "hang":
            if "content" not in response:
                # Logged now (status 0: nothing sent), so the log does not depend on the sleep.
                self.log(fmt, request, 0, fault)
            time.sleep(float(response.get("seconds", 5)))
            if "content" not in response:
                self.close_connection = True
                return
        contents = [response.get("content", "")]
        if fmt == "openai":
            for _ in range(1, int(request.get("n") or 1)):
                extra = script.take(fmt, call, self.request_text(request), plain_only=True)
                contents.append(extra["content"] if extra and "content" in extra else contents[0])
        answer = self.answer(fmt, request, contents, fault, response)
        self.send_json(200, answer, fmt, request, fault)

    def check_request(self, fmt, request):
        """What a real server would reject: the fields and headers our clients must send."""
        if not isinstance(request.get("messages"), list) or not request["messages"]:
            return "messages: a non-empty list is required"
        if not request.get("model"):
            return "model: required"
        if fmt == "anthropic":
            if not isinstance(request.get("max_tokens"), int):
                return "max_tokens: Field required"
            if self.headers.get("anthropic-version") is None:
                return "anthropic-version: header is required"
            thinking = request.get("thinking")
            if thinking is not None:
                budget = thinking.get("budget_tokens") if isinstance(thinking, dict) else None
                if not isinstance(thinking, dict) or thinking.get("type") != "enabled" or \
                        not isinstance(budget, int):
                    return "thinking: expected {\"type\": \"enabled\", \"budget_tokens\": N}"
                if budget < 1024:
                    return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                if request["max_tokens"] <= budget:
                    return "`max_tokens` must be greater than `thinking.budget_tokens`"
                if "temperature" in request:
                    return ("`temperature` may only be set to 1 when thinking is enabled. Please "
                            "consult our documentation")
                if "top_p" in request and request["top_p"] < 0.95:
                    return ("`top_p` must be greater than or equal to 0.95 or unset when thinking "
                            "is enabled")
            return None
        model = request.get("model")
        script = self.server.script
        if model in script.reasoning_models:
            for field in ("max_tokens", "temperature", "top_p"):
                if field in request:
                    hint = " Use 'max_completion_tokens' instead." if field == "max_tokens" else ""
                    return {"message": "Unsupported parameter: '%s' is not supported with this "
                                       "model.%s" % (field, hint),
                            "param": field, "code": "unsupported_parameter"}
        elif "reasoning_effort" in request:
            return {"message": "Unrecognized request argument supplied: reasoning_effort",
                    "param": "reasoning_effort", "code": "unsupported_parameter"}
        if model in script.legacy_models and "max_completion_tokens" in request:
            return {"message": "Unsupported parameter: 'max_completion_tokens' is not supported "
                               "by this server. Use 'max_tokens' instead.",
                    "param": "max_completion_tokens", "code": "unsupported_parameter"}
        return None

    def prompt_chars(self, request):
        chars = len(text_of(request.get("system", "")))
        for m in request.get("messages") or []:
            if isinstance(m, dict):
                chars += len(text_of(m.get("content", "")))
        return chars

    def cached_openai(self, request, prompt_tokens, response):
        """Tokens of the prompt's longest prefix shared with an earlier prompt of the model."""
        if "cached_tokens" in response:
            return int(response["cached_tokens"])
        script = self.server.script
        text = "\n".join(text_of(m.get("content", "")) for m in request.get("messages") or []
                         if isinstance(m, dict))
        with script.lock:
            seen = script.openai_prompts.setdefault(request.get("model"), [])
            common = 0
            for earlier in seen:
                n = 0
                limit = min(len(earlier), len(text))
                while n < limit and earlier[n] == text[n]:
                    n += 1
                common = max(common, n)
            seen.append(text)
        if prompt_tokens < script.cache_min_tokens:
            return 0
        return min(prompt_tokens, (common // 4) // 128 * 128)

    def cached_anthropic(self, request):
        """(prefix tokens, seen before): the prompt up to the last cache_control mark."""
        parts, marked = [], 0
        system = request.get("system", "")
        blocks = [system] if isinstance(system, str) else list(system or [])
        for m in request.get("messages") or []:
            content = m.get("content", "") if isinstance(m, dict) else ""
            blocks.extend([content] if isinstance(content, str) else content)
        for b in blocks:
            parts.append(b if isinstance(b, str) else b.get("text", ""))
            if isinstance(b, dict) and b.get("cache_control") is not None:
                marked = len(parts)
        if marked == 0:
            return 0, False
        prefix = "".join(parts[:marked])
        tokens = len(prefix) // 4
        if tokens < self.server.script.cache_min_tokens:
            return 0, False
        key = hashlib.sha256((request.get("model", "") + "\0" + prefix).encode()).hexdigest()
        with self.server.script.lock:
            seen = key in self.server.script.anthropic_prefixes
            self.server.script.anthropic_prefixes.add(key)
        return tokens, seen

    def answer(self, fmt, request, contents, fault, response):
        prompt_tokens = max(1, self.prompt_chars(request) // 4)
        completion_tokens = sum(approx_tokens(c) for c in contents)
        model = request.get("model", "")
        stamp = "%d-%d" % (int(time.time() * 1000), threading.get_ident() % 10000)
        stop = {"truncated": ("length", "max_tokens"),
                "refused": ("content_filter", "refusal")}.get(fault, ("stop", "end_turn"))
        if fmt == "openai":
            reasoning = model in self.server.script.reasoning_models
            reasoning_tokens = int(response.get("reasoning_tokens", completion_tokens // 2 + 1)) \
                if reasoning else 0
            completion_tokens += reasoning_tokens
            messages = []
            for c in contents:
                message = {"role": "assistant", "content": c, "refusal": None}
                if "reasoning_content" in response:
                    message["reasoning_content"] = response["reasoning_content"]
                messages.append(message)
            return {
                "id": "chatcmpl-" + stamp,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{
                    "index": i,
                    "message": m,
                    "finish_reason": stop[0],
                } for i, m in enumerate(messages)],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": completion_tokens,
                    "total_tokens": prompt_tokens + completion_tokens,
                    "prompt_tokens_details": {
                        "cached_tokens": self.cached_openai(request, prompt_tokens, response),
                        "audio_tokens": 0},
                    "completion_tokens_details": {
                        "reasoning_tokens": reasoning_tokens, "audio_tokens": 0,
                        "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
                },
            }
        content = []
        if request.get("thinking"):
            thinking = str(response.get("thinking", "Let me think about the kernel first."))
            content.append({"type": "thinking", "thinking": thinking,
                            "signature": "sig-" + stamp})
            completion_tokens += approx_tokens(thinking)
        content.append({"type": "text", "text": contents[0]})
        cached, seen = self.cached_anthropic(request)
        cached = min(cached, prompt_tokens)
        return {
            "id": "msg_" + stamp,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop[1],
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens - cached,
                      "cache_creation_input_tokens": 0 if seen else cached,
                      "cache_read_input_tokens": cached if seen else 0,
                      "output_tokens": completion_tokens},
        }

    def send_json(self, status, body, fmt, request, fault, headers=None):
        data = json.dumps(body).encode("utf-8")
        self.send_raw(status, data, fmt, request, fault, headers)

    def send_raw(self, status, data, fmt, request, fault, headers=None):
        self.log(fmt, request, status, fault)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (its timeout); nothing to do

    def auth(self):
        """(header name, SHA-256 hex of the key) of the key sent, or (None, None)."""
        for name in ("Authorization", "x-api-key"):
            value = self.headers.get(name)
            if value:
                if name == "Authorization" and value.startswith("Bearer "):
                    value = value[len("Bearer "):]
                return name, hashlib.sha256(value.encode("utf-8")).hexdigest()
        return None, None

    @staticmethod
    def cache_marks(request):
        marks = 0
        system = request.get("system")
        blocks = list(system) if isinstance(system, list) else []
        for m in request.get("messages") or []:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                blocks.extend(m["content"])
        for b in blocks:
            if isinstance(b, dict) and b.get("cache_control") is not None:
                marks += 1
        return marks

    @staticmethod
    def request_text(request):
        """The request's system prompt and messages, as one text."""
        parts = [text_of(request.get("system", ""))]
        for m in request.get("messages") or []:
            if isinstance(m, dict):
                parts.append(text_of(m.get("content", "")))
        return "\n".join(parts)

    def log(self, fmt, request, status, fault):
        if self.server.log_path is None:
            return
        auth_header, auth_sha256 = self.auth()
        line = {
            "time": time.time(),
            "path": self.path,
            "format": fmt,
            "call": self.headers.get("X-KernelFoundry-Call"),
            "model": request.get("model"),
            "status": status,
            "fault": fault,
            # Whether a key came; never the key itself.
            "has_auth": bool(self.headers.get("Authorization") or self.headers.get("x-api-key")),
            "auth_header": auth_header,
            "auth_sha256": auth_sha256,
            "anthropic_version": self.headers.get("anthropic-version"),
            "prompt_chars": self.prompt_chars(request),
            "request_keys": sorted(request.keys()),
            "n": request.get("n"),
            "max_tokens": request.get("max_tokens"),
            "max_completion_tokens": request.get("max_completion_tokens"),
            "temperature": request.get("temperature"),
            "top_p": request.get("top_p"),
            "reasoning_effort": request.get("reasoning_effort"),
            "thinking": request.get("thinking"),
            # Anthropic: how many blocks carry cache_control, and the characters up to the last.
            "cache_marks": self.cache_marks(request),
        }
        if self.server.script.log_prompts:
            line["prompt_text"] = self.request_text(request)
        with self.server.log_lock:
            with open(self.server.log_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
                f.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True, help="script JSON file")
    parser.add_argument("--port-file", required=True, help="file that receives the port")
    parser.add_argument("--log", help="JSON-lines log, one line per request")
    parser.add_argument("--port", type=int, default=0, help="0 = any free port")
    args = parser.parse_args()

    try:
        with open(args.script, encoding="utf-8") as f:
            script = Script(json.load(f))
    except (OSError, ValueError) as e:
        print("kf_llm_server: bad script %s: %s" % (args.script, e), file=sys.stderr)
        return 2

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True  # a hanging handler must not hold up exit
    server.script = script
    server.log_path = args.log
    server.log_lock = threading.Lock()

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    tmp = args.port_file + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("%d\n" % server.server_address[1])
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever(poll_interval=0.1)
    except SystemExit:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
