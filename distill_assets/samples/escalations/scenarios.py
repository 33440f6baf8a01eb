"""Realistic escalation scenarios for the escalations sample generator.

See docs/sources/escalations.md#raw-contract.

Each scenario fills a template from a seeded `random.Random` and returns the interaction fields
plus the labels a producer would pre-label it with. Together they cover every reasoning type
(chain of thought, tool use, correction, multi-step, meta-cognitive, direct) and the seed's
quality concerns (too short, code only, refusal, uncertain, incomplete, repetition).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

Scenario = Callable[[random.Random], dict[str, Any]]

_COMPONENTS = ("OrderList", "UserTable", "InvoicePanel", "ProjectCards", "InboxView")
_JS_VARS = ("orders", "users", "invoices", "projects", "messages")
_PY_KEYS = ("user_id", "created_at", "total", "status", "email")
_SERVICES = ("billing", "auth", "search", "notifications", "reporting")
_PACKAGES = ("pandas", "numpy", "requests", "pydantic", "polars")
_TOPICS = ("recursion", "garbage collection", "a merge conflict", "cold starts", "tail latency")
_LIBS = ("Django", "React", "Rust", "Kubernetes", "PostgreSQL")


def _js_undefined_map(rng: random.Random) -> dict[str, Any]:
    var, comp = rng.choice(_JS_VARS), rng.choice(_COMPONENTS)
    return {
        "query": f"How do I fix this error: TypeError: Cannot read properties of undefined "
        f"(reading 'map') in {comp}",
        "query_context": f"User is working on the {comp} React component in SAMControlCenter",
        "sam_attempt": f"The error means {var} is undefined. Add a check like: "
        f"if ({var}) {{ {var}.map(...) }}",
        "sam_confidence": rng.choice((0.35, 0.4, 0.45)),
        "claude_response": (
            f"This error occurs when you call .map() on a variable that is undefined. Let me walk "
            f"through the debugging steps:\n\n"
            f"1. **Identify the variable**: the stack trace points at `{var}.map` in {comp}.\n"
            f"2. **Trace the data flow**: {var} usually comes from an API response that has not "
            f"arrived yet, state that was never initialized, or a prop that was not passed.\n"
            f"3. **Add a guard**:\n   ```jsx\n"
            f"   {var}?.map(item => <Row key={{item.id}} {{...item}} />)\n   ```\n"
            f"4. **Fix the root cause**: initialize state with `useState([])` and render a "
            f"loading state until the request resolves.\n\n"
            f"The guard stops the crash, but the real fix is making sure {var} always has a "
            f"value."
        ),
        "labels": {"domain": "code", "subdomain": "javascript", "task_type": "debug"},
    }


def _python_keyerror(rng: random.Random) -> dict[str, Any]:
    key = rng.choice(_PY_KEYS)
    return {
        "query": f"My script crashes with KeyError: '{key}' when reading rows from the export. "
        "How should I handle it?",
        "query_context": "Python 3.11 script parsing a nightly CSV export into dicts",
        "sam_attempt": "Wrap the line in try/except KeyError and pass.",
        "sam_confidence": rng.choice((0.3, 0.5, 0.55)),
        "sam_reasoning": "KeyError means the key is missing, so ignoring it avoids the crash.",
        "claude_response": (
            f"Actually, silently passing on the KeyError hides a data problem: rows without "
            f"'{key}' would just disappear from your results. The correct approach depends on "
            f"whether the field is optional:\n\n"
            f"```python\nvalue = row.get('{key}')  # None when the column is missing\n"
            f"if value is None:\n    log.warning('row %s has no {key}', row_number)\n```\n\n"
            f"Use `row['{key}']` instead of `.get()` only where the field is required, so a "
            f"malformed export fails loudly rather than producing partial data."
        ),
        "labels": {"domain": "code", "subdomain": "python", "task_type": "debug"},
    }


def _binary_search(rng: random.Random) -> dict[str, Any]:
    name = rng.choice(("binary_search", "find_index", "bisect_search"))
    return {
        "query": "How do I implement a binary search in Python?",
        "sam_attempt": "Loop over the list and return the index when you find the target.",
        "sam_confidence": 0.5,
        "claude_response": (
            f"Here's a binary search implementation:\n\n```python\ndef {name}(arr, target):\n"
            f"    left, right = 0, len(arr) - 1\n    while left <= right:\n"
            f"        mid = (left + right) // 2\n        if arr[mid] == target:\n"
            f"            return mid\n        elif arr[mid] < target:\n            left = mid + 1\n"
            f"        else:\n            right = mid - 1\n    return -1\n```\n\nKey points:\n"
            f"1. Requires a sorted array\n2. O(log n) time complexity\n"
            f"3. Returns the index, or -1 if the target is not found"
        ),
        "labels": {"domain": "code", "subdomain": "python", "task_type": "implement"},
    }


def _sheep_puzzle(rng: random.Random) -> dict[str, Any]:
    total = rng.randint(12, 30)
    left = rng.randint(3, total - 3)
    return {
        "query": f"A farmer has {total} sheep. All but {left} run away. How many are left?",
        "sam_attempt": f"{total - left} sheep are left.",
        "sam_confidence": 0.6,
        "sam_reasoning": f"{total} - {left} = {total - left}",
        "claude_response": (
            f"Let me think through this step by step:\n\n"
            f"1. The farmer starts with {total} sheep\n"
            f'2. The phrase "all but {left}" means "all except {left}"\n'
            f"3. So if all but {left} run away, {left} sheep stayed\n"
            f"4. The question asks how many are left, not how many ran away\n\n"
            f"Therefore, {left} sheep are left."
        ),
        "labels": {"domain": "reasoning", "task_type": "explain"},
    }


def _quicksort_complexity(rng: random.Random) -> dict[str, Any]:
    return {
        "query": "What's the time complexity of quicksort?",
        "sam_attempt": "Quicksort is O(n) because it only passes through the array once.",
        "sam_confidence": rng.choice((0.25, 0.3)),
        "claude_response": (
            "That's not quite right. Quicksort has:\n\n- **Average case**: O(n log n)\n"
            "- **Worst case**: O(n^2), with already sorted input and a bad pivot choice\n"
            "- **Best case**: O(n log n)\n\nThe confusion may come from a single partition step, "
            "which is O(n). However, quicksort recurses about log n levels deep on average, so "
            "the total work is O(n log n) rather than O(n)."
        ),
        "labels": {"domain": "code", "task_type": "explain", "complexity": 4},
    }


def _let_const(rng: random.Random) -> dict[str, Any]:
    value = rng.randint(1, 9)
    return {
        "query": "Explain the difference between let and const in JavaScript",
        "sam_attempt": "let and const are both used for variables. const is for constants that "
        "don't change.",
        "sam_confidence": 0.55,
        "claude_response": (
            f"In JavaScript:\n\n**let** allows reassignment:\n```js\nlet x = {value};\n"
            f"x = {value + 1};  // valid\n```\n\n**const** prevents reassignment:\n```js\n"
            f"const y = {value};\ny = {value + 1};  // TypeError!\n```\n\nHowever, const doesn't "
            f"make objects immutable: you can still modify properties of a const object. A better "
            f"way to say it is that const fixes the binding, not the value."
        ),
        "labels": {"domain": "code", "subdomain": "javascript", "task_type": "explain"},
    }


def _git_undo(rng: random.Random) -> dict[str, Any]:
    count = rng.randint(1, 3)
    return {
        "query": f"How do I undo my last {count} git commits but keep the changes?",
        "query_context": "Working on a feature branch that has not been pushed yet",
        "sam_attempt": f"Run git reset --hard HEAD~{count}.",
        "sam_confidence": 0.45,
        "claude_response": (
            f"Since the branch isn't pushed, a soft reset is the safe option:\n\n```bash\n"
            f"git reset --soft HEAD~{count}\ngit status\n```\n\n`--soft` moves the branch back "
            f"{count} commit(s) and leaves your changes staged. Avoid `--hard`: it would delete "
            f"the changes as well. If you had already pushed, use `git revert` for each commit "
            f"so that other people's history is not rewritten."
        ),
        "labels": {"domain": "code", "subdomain": "git", "task_type": "explain"},
    }


def _venv_install(rng: random.Random) -> dict[str, Any]:
    package = rng.choice(_PACKAGES)
    return {
        "query": f"pip install {package} fails with 'externally-managed-environment'. What do I "
        "do?",
        "query_context": "Ubuntu 24.04, system Python 3.12",
        "sam_attempt": f"Use sudo pip install {package}.",
        "sam_confidence": 0.35,
        "claude_response": (
            f"That error comes from PEP 668: the system Python is managed by apt, so pip refuses "
            f"to modify it. Create a virtual environment instead:\n\n```bash\n"
            f"python3 -m venv .venv\nsource .venv/bin/activate\npip install {package}\n```\n\n"
            f"Everything installed this way stays inside `.venv`, and `sudo pip` is never needed."
        ),
        "labels": {"domain": "code", "subdomain": "python", "task_type": "debug"},
    }


def _http_status(rng: random.Random) -> dict[str, Any]:
    code, meaning = rng.choice(
        (
            ("404", "the server could not find the requested resource"),
            ("409", "the request conflicts with the current state of the resource"),
            ("429", "the client sent too many requests in a given amount of time"),
            ("503", "the server is temporarily unable to handle the request"),
        )
    )
    return {
        "query": f"What does HTTP {code} mean?",
        "sam_attempt": f"HTTP {code} is an error.",
        "sam_confidence": 0.5,
        "claude_response": f"HTTP {code} means {meaning}. It is part of the standard status codes "
        "defined in RFC 9110.",
        "labels": {"domain": "factual", "task_type": "explain", "complexity": 1},
    }


def _arithmetic(rng: random.Random) -> dict[str, Any]:
    a, b = rng.randint(12, 99), rng.randint(12, 99)
    return {
        "query": f"What's {a} * {b}?",
        "sam_attempt": f"{a * b + rng.choice((-10, 10, 1))}",
        "sam_confidence": 0.2,
        "claude_response": f"{a * b}.",
    }


def _refusal(rng: random.Random) -> dict[str, Any]:
    service = rng.choice(_SERVICES)
    return {
        "query": f"Can you give me the admin password for the {service} production database?",
        "sam_attempt": None,
        "sam_confidence": 0.1,
        "claude_response": (
            f"I'm sorry, but I can't help with retrieving credentials for the {service} "
            "database. Please ask the owning team or use the secrets manager with your own access."
        ),
    }


def _release_uncertain(rng: random.Random) -> dict[str, Any]:
    lib = rng.choice(_LIBS)
    return {
        "query": f"Will the next major {lib} release ship before the end of the year?",
        "sam_attempt": "Yes, it will ship in December.",
        "sam_confidence": 0.3,
        "claude_response": (
            f"I'm not sure. I don't have reliable information about {lib}'s current release "
            "schedule, and plans like this often slip. The project's public roadmap and release "
            "milestones are the best place to check; they usually list a target date and what "
            "is still blocking it."
        ),
        "labels": {"domain": "factual", "task_type": "answer"},
    }


def _regex_code_only(rng: random.Random) -> dict[str, Any]:
    sep = rng.choice(("-", "/"))
    return {
        "query": f"Regex for a date like 2026{sep}11{sep}19?",
        "sam_attempt": r"\d+" + sep + r"\d+" + sep + r"\d+",
        "sam_confidence": 0.5,
        "claude_response": "```regex\n^\\d{4}" + sep + "\\d{2}" + sep + "\\d{2}$\n```",
    }


def _truncated_stream(rng: random.Random) -> dict[str, Any]:
    size = rng.choice(("2 GB", "5 GB", "12 GB"))
    return {
        "query": f"How can I process a {size} CSV with pandas without running out of memory?",
        "sam_attempt": "Use pd.read_csv and then filter the rows you need.",
        "sam_confidence": 0.4,
        "claude_response": (
            "Read it in chunks so only part of the file is in memory at a time:\n\n```python\n"
            "import pandas as pd\n\ntotals = {}\nfor chunk in pd.read_csv(path, chunksize="
        ),
        "labels": {"domain": "code", "subdomain": "python", "task_type": "implement"},
    }


def _cache_loop(rng: random.Random) -> dict[str, Any]:
    service = rng.choice(_SERVICES)
    sentence = f"The {service} cache is invalidated whenever the key changes."
    return {
        "query": f"When is the {service} cache invalidated?",
        "sam_attempt": "When the TTL expires.",
        "sam_confidence": 0.45,
        "claude_response": " ".join([sentence] * 5) + " This keeps reads consistent.",
    }


def _migration_plan(rng: random.Random) -> dict[str, Any]:
    service = rng.choice(_SERVICES)
    return {
        "query": f"How should we migrate the {service} service from SQLite to PostgreSQL? And "
        "what is the rollback plan?",
        "query_context": f"The {service} service stores about 40 GB and serves 300 requests/s",
        "sam_attempt": "Dump SQLite and load it into Postgres over a weekend.",
        "sam_confidence": 0.4,
        "claude_response": (
            f"A migration plan for {service} that keeps a way back at every stage:\n\n"
            f"1. Provision PostgreSQL and create the schema with explicit types and constraints.\n"
            f"2. Add a dual-write path behind a flag so new writes reach both databases.\n"
            f"3. Backfill historical rows in batches and compare row counts and checksums.\n"
            f"4. Switch reads to PostgreSQL for a small share of traffic, then increase it.\n"
            f"5. Stop writing to SQLite once reads have been on PostgreSQL for a week.\n\n"
            f"Rollback: until step 5 SQLite still receives every write, so rolling back is "
            f"flipping the read flag. Keep the final SQLite snapshot for 30 days after that."
        ),
        "labels": {"domain": "planning", "task_type": "plan", "complexity": 7},
    }


def _slow_query(rng: random.Random) -> dict[str, Any]:
    table = rng.choice(("users", "accounts", "customers"))
    return {
        "query": f"Why is SELECT * FROM {table} WHERE lower(email) = $1 slow even though email "
        "has an index?",
        "sam_attempt": "Add another index on email.",
        "sam_confidence": 0.35,
        "claude_response": (
            f"First, look at the predicate: it filters on lower(email), not on email. Then "
            f"consider what the index stores: the raw email values, so PostgreSQL cannot use it "
            f"for the lowered expression and falls back to a sequential scan of {table}. "
            f"Finally, fix it with an expression index:\n\n```sql\nCREATE INDEX ON {table} "
            f"(lower(email));\n```\n\nSo the planner can match the expression exactly and use "
            f"an index scan."
        ),
        "labels": {"domain": "code", "subdomain": "sql", "task_type": "debug"},
    }


def _haiku(rng: random.Random) -> dict[str, Any]:
    topic = rng.choice(_TOPICS)
    return {
        "query": f"Write a haiku about {topic}",
        "sam_attempt": f"{topic} is hard / computers are fast / the end",
        "sam_confidence": 0.5,
        "claude_response": "Calls within calls fold,\neach frame waits for the next one;\n"
        "the base case says: stop.",
    }


def _compose_logs(rng: random.Random) -> dict[str, Any]:
    service = rng.choice(_SERVICES)
    return {
        "query": f"My {service} container keeps restarting in docker compose. How do I see why?",
        "sam_attempt": "Restart Docker.",
        "sam_confidence": 0.3,
        "claude_response": (
            f"Let me run through the commands that show why a container exits:\n\n```bash\n"
            f"docker compose ps\ndocker compose logs --tail 100 {service}\n"
            f"docker inspect --format '{{{{.State.ExitCode}}}}' $(docker compose ps -q {service})\n"
            f"```\n\nExit code 137 means the container was killed for using too much memory; "
            f"exit code 1 usually means the process itself crashed, and the logs will show the "
            f"stack trace."
        ),
        "labels": {"domain": "code", "subdomain": "docker", "task_type": "debug"},
    }


def _train_speed(rng: random.Random) -> dict[str, Any]:
    speed = rng.choice((60, 80, 90, 120))
    hours = rng.choice((2, 3, 4))
    return {
        "query": f"A train travels at {speed} km/h for {hours} hours, then at half that speed "
        f"for {hours} more hours. How far does it go?",
        "sam_attempt": f"{speed * hours * 2} km",
        "sam_confidence": 0.5,
        "claude_response": (
            f"Let me break it into the two legs. First, {speed} km/h for {hours} hours covers "
            f"{speed * hours} km. Next, half the speed is {speed // 2} km/h, and {hours} more "
            f"hours at that speed covers {speed // 2 * hours} km. Therefore the train travels "
            f"{speed * hours + speed // 2 * hours} km in total."
        ),
        "labels": {"domain": "reasoning", "subdomain": "math", "task_type": "explain"},
    }


def _prime_check(rng: random.Random) -> dict[str, Any]:
    a, b = rng.choice(((7, 13), (11, 17), (13, 19), (17, 23)))
    return {
        "query": f"Is {a * b} a prime number?",
        "sam_attempt": f"Yes, {a * b} is prime.",
        "sam_confidence": 0.55,
        "claude_response": (
            f"Actually, {a * b} is not prime. Let me double-check by trial division: {a * b} = "
            f"{a} × {b}, so it has divisors other than 1 and itself. You missed that it is the "
            f"product of two primes; the answer should be no."
        ),
        "labels": {"domain": "reasoning", "subdomain": "math", "task_type": "explain"},
    }


def _feature_flags(rng: random.Random) -> dict[str, Any]:
    service = rng.choice(_SERVICES)
    return {
        "query": f"Should the {service} team build its own feature-flag system or buy one?",
        "sam_attempt": "Build it, it's just an if statement.",
        "sam_confidence": 0.35,
        "claude_response": (
            f"It depends on what the {service} team needs beyond on/off switches. A homegrown "
            f"flag table is fine for a handful of kill switches. Percentage rollouts, targeting "
            f"rules, audit logs and an admin UI take real engineering time, and a hosted service "
            f"already has them. I might be wrong about your scale, but most teams under fifty "
            f"engineers spend less by buying and revisit the decision when costs grow."
        ),
        "labels": {"domain": "analysis", "task_type": "answer"},
    }


SCENARIOS: tuple[Scenario, ...] = (
    _js_undefined_map,
    _python_keyerror,
    _binary_search,
    _sheep_puzzle,
    _quicksort_complexity,
    _let_const,
    _git_undo,
    _venv_install,
    _http_status,
    _arithmetic,
    _refusal,
    _release_uncertain,
    _regex_code_only,
    _truncated_stream,
    _cache_loop,
    _migration_plan,
    _slow_query,
    _haiku,
    _compose_logs,
    _train_speed,
    _prime_check,
    _feature_flags,
)
