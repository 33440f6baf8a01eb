"""A labelled set of escalations like real captures: genuine answers and the junk a logger keeps.

Written for issue 27 to measure the answer-ness model (`rules/escalations.py`, "Answer-ness") on
inputs its rules were not written from. A capture is a developer's query to an assistant and the
reply the logger stored: either a genuine answer (short factual, code with a line of prose, pure
code, numbered steps, "First… Then… Finally…", markdown sections, a hedged answer, a plain
explanation) or one of the junk kinds a prompt-history logger records as the "answer" (the user's
next message: a request to the assistant, a wish, a bug report, a pasted log or command; an
acknowledgement, "I don't know", a question back).

Deterministic: every row comes from one template and one topic chosen by index arithmetic
(`generate()` gives the same rows every time). Each kind has two template families: `tune`
(looked at while the rules were adjusted) and `holdout` (written apart and only measured), so the
report shows both; `fresh` is a second, smaller holdout
(see FRESH_GENUINE). Rows: `id, kind, label ("answer" | "junk"), split, query, claude_response`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Topic:
    """One developer question and the material a genuine answer to it is made of."""

    query: str
    thing: str
    fact: str
    lang: str
    code: str
    steps: tuple[str, str, str, str]
    caveat: str


TOPICS: tuple[Topic, ...] = (
    Topic(
        "How do I make the Flask dev server reload when I edit a file?",
        "the Flask server",
        "the Flask dev server restarts itself on file changes when you start it in debug mode, "
        "because debug mode turns on the Werkzeug reloader",
        "bash",
        "flask --app app run --debug",
        (
            "activate the virtualenv that has Flask installed",
            "start the server with `flask --app app run --debug`",
            "edit a Python file and save it",
            "watch the console print `Detected change` and restart",
        ),
        "the reloader does not watch templates unless TEMPLATES_AUTO_RELOAD is set",
    ),
    Topic(
        "What's the difference between a list and a tuple in Python?",
        "tuples",
        "a list is mutable and a tuple is immutable, so a tuple can be a dict key or a set member "
        "while a list cannot",
        "python",
        "point = (3, 4)\nlocations = {point: 'home'}\nitems = [1, 2]\nitems.append(3)",
        (
            "use a list when the collection grows or changes",
            "use a tuple for fixed records such as coordinates",
            "use a tuple when you need a hashable key",
            "convert with `tuple(items)` when you need to freeze a list",
        ),
        "a tuple that holds a list is still not hashable",
    ),
    Topic(
        "How can I undo my last git commit but keep the changes?",
        "the last commit",
        "`git reset --soft HEAD~1` moves the branch back one commit and keeps every change staged, "
        "so nothing in your working tree is lost",
        "bash",
        "git reset --soft HEAD~1\ngit status",
        (
            "check with `git log -1` that the commit is the one to undo",
            "run `git reset --soft HEAD~1`",
            "inspect the staged changes with `git status`",
            "commit again once the changes are right",
        ),
        "if the commit was already pushed, others may have pulled it, so prefer `git revert`",
    ),
    Topic(
        "Why does my React component render twice in development?",
        "the component",
        "React StrictMode renders components twice in development on purpose, to surface side "
        "effects in render; production builds render once",
        "jsx",
        "root.render(\n  <React.StrictMode>\n    <App />\n  </React.StrictMode>\n);",
        (
            "open the entry file that calls `root.render`",
            "find the `<React.StrictMode>` wrapper",
            "keep it, and move side effects into `useEffect`",
            "confirm with a production build that it renders once",
        ),
        "effects also run twice in development, so they must clean up after themselves",
    ),
    Topic(
        "How do I set a TTL on a Redis key?",
        "the Redis key",
        "`EXPIRE key seconds` sets a time-to-live on an existing key, and `SET key value EX "
        "seconds` sets the value and its expiry in one command",
        "bash",
        "redis-cli SET session:42 alice EX 3600\nredis-cli TTL session:42",
        (
            "decide how long the key should live, in seconds",
            "write it with `SET key value EX seconds`",
            "check the remaining time with `TTL key`",
            "refresh it with `EXPIRE` when the session is used",
        ),
        "a plain SET without EX removes an existing TTL",
    ),
    Topic(
        "What does the 'address already in use' error mean when I start my server?",
        "the port",
        "another process is already listening on that port, so the operating system refuses to "
        "bind a second socket to it",
        "bash",
        "lsof -i :8000\nkill <pid>",
        (
            "find the process with `lsof -i :8000`",
            "decide whether it is an old copy of your server",
            "stop it with `kill <pid>`",
            "start your server again, or pick another port",
        ),
        "a socket in TIME_WAIT can hold the port for a minute after a crash",
    ),
    Topic(
        "How should I store passwords in my database?",
        "the password table",
        "store a slow salted hash such as bcrypt or argon2 and never the password itself, so a "
        "leaked table does not reveal anyone's password",
        "python",
        "from argon2 import PasswordHasher\n\nph = PasswordHasher()\nstored = ph.hash(password)\n"
        "ph.verify(stored, attempt)",
        (
            "pick argon2id or bcrypt from a maintained library",
            "hash the password when the account is created",
            "verify attempts with the library's verify call",
            "rehash on login when the parameters change",
        ),
        "the cost parameters should be raised as hardware gets faster",
    ),
    Topic(
        "How do I read a large CSV in pandas without running out of memory?",
        "the CSV",
        "`pd.read_csv` with `chunksize` returns an iterator of smaller DataFrames, so only one "
        "chunk is in memory at a time",
        "python",
        "import pandas as pd\n\nfor chunk in pd.read_csv('big.csv', chunksize=100_000):\n"
        "    process(chunk)",
        (
            "pick a chunk size that fits comfortably in memory",
            "pass `chunksize` to `pd.read_csv`",
            "aggregate each chunk as it arrives",
            "combine the partial results at the end",
        ),
        "setting `dtype` for each column also cuts memory a lot",
    ),
    Topic(
        "What is the time complexity of binary search?",
        "binary search",
        "binary search runs in O(log n) time because every comparison halves the part of the "
        "sorted array that can still hold the target",
        "python",
        "import bisect\n\nindex = bisect.bisect_left(sorted_items, target)",
        (
            "start with the whole sorted array",
            "compare the target with the middle element",
            "keep the half that can still contain it",
            "stop when the range is empty or the element is found",
        ),
        "it only works on sorted data, and sorting first costs O(n log n)",
    ),
    Topic(
        "How do I keep a Docker container running after its command exits?",
        "the container",
        "a container stops when its main process exits, so it keeps running only while a "
        "long-lived foreground process runs as PID 1",
        "bash",
        "docker run -d --name web myimage\ndocker logs -f web",
        (
            "make the image's CMD start a foreground process",
            "run it detached with `docker run -d`",
            "follow the output with `docker logs -f`",
            "add a restart policy if it must come back after a crash",
        ),
        "a `sleep infinity` CMD keeps it alive but hides real failures",
    ),
    Topic(
        "How do I cancel an in-flight fetch request in JavaScript?",
        "the fetch request",
        "pass an `AbortController`'s signal to `fetch` and call `abort()`; the promise then "
        "rejects with an `AbortError`",
        "javascript",
        "const controller = new AbortController();\nfetch(url, { signal: controller.signal });\n"
        "controller.abort();",
        (
            "create an `AbortController` before the request",
            "pass `controller.signal` in the fetch options",
            "call `controller.abort()` when the user navigates away",
            "catch the `AbortError` so it is not reported as a failure",
        ),
        "a controller can only abort once, so create a new one per request",
    ),
    Topic(
        "Why is my SQL query slow when I filter on a date column?",
        "the date filter",
        "without an index on the date column the database scans every row, and wrapping the "
        "column in a function also stops it from using an index",
        "sql",
        "CREATE INDEX idx_orders_created ON orders (created_at);\n"
        "SELECT * FROM orders WHERE created_at >= '2026-01-01';",
        (
            "run EXPLAIN on the query to see the scan",
            "create an index on the date column",
            "compare the column with a range instead of a function of it",
            "run EXPLAIN again to confirm the index is used",
        ),
        "an index also slows down writes a little",
    ),
    Topic(
        "How do I run a Python script every night at 2am on a Mac?",
        "the nightly job",
        "on macOS a launchd agent with a StartCalendarInterval of hour 2 runs the script every "
        "night, and unlike cron it runs a missed job after the machine wakes",
        "xml",
        "<key>StartCalendarInterval</key>\n<dict>\n  <key>Hour</key><integer>2</integer>\n"
        "  <key>Minute</key><integer>0</integer>\n</dict>",
        (
            "write a plist in ~/Library/LaunchAgents",
            "set ProgramArguments to the python path and the script",
            "add a StartCalendarInterval with Hour 2",
            "load it with `launchctl load` and check `launchctl list`",
        ),
        "launchd runs with a minimal PATH, so use absolute paths",
    ),
    Topic(
        "What does `async` do in a Python function definition?",
        "async functions",
        "`async def` makes a coroutine function: calling it returns a coroutine object that runs "
        "only when awaited or scheduled on an event loop",
        "python",
        "import asyncio\n\nasync def fetch():\n    await asyncio.sleep(1)\n    return 42\n\n"
        "print(asyncio.run(fetch()))",
        (
            "define the function with `async def`",
            "await other coroutines inside it",
            "start the outermost one with `asyncio.run`",
            "never call blocking I/O inside it",
        ),
        "forgetting `await` gives a coroutine object instead of the result",
    ),
    Topic(
        "How do I limit the rate of requests my API client sends?",
        "the API client",
        "a token bucket allows a fixed number of requests per interval and makes callers wait "
        "for the next token, which keeps the client under the server's rate limit",
        "python",
        "import time\n\nclass Bucket:\n    def __init__(self, rate):\n        self.rate = rate\n"
        "        self.last = time.monotonic()",
        (
            "read the server's documented limit",
            "create a token bucket with that rate",
            "take a token before each request",
            "back off when the server still answers 429",
        ),
        "the Retry-After header says how long the server wants you to wait",
    ),
    Topic(
        "How do I make a Swift struct conform to Codable?",
        "the struct",
        "a struct whose stored properties are all Codable gets its encoding and decoding for "
        "free when you declare `: Codable`",
        "swift",
        "struct Note: Codable {\n    let title: String\n    let body: String\n}\n"
        "let data = try JSONEncoder().encode(note)",
        (
            "declare the struct as `Codable`",
            "make sure every stored property is Codable too",
            "add `CodingKeys` if the JSON names differ",
            "encode with `JSONEncoder` and decode with `JSONDecoder`",
        ),
        "dates need a decoding strategy that matches the JSON format",
    ),
)

TOPIC_TERMS = ("app", "sidebar", "settings page", "voice mode", "menu bar icon", "chat window")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


# --- genuine answers ------------------------------------------------------------------------------


def _short_factual(t: Topic, variant: int) -> str:
    forms = (
        "{Fact}.",
        "Short answer: {fact}.",
        "{Fact}. That covers the usual case.",
        "In short, {fact}.",
    )
    return forms[variant % len(forms)].format(Fact=_cap(t.fact), fact=t.fact)


def _short_factual_holdout(t: Topic, variant: int) -> str:
    forms = ("Yes - {fact}.", "It's simple: {fact}.")
    return forms[variant % len(forms)].format(fact=t.fact)


def _code_prose(t: Topic, variant: int) -> str:
    forms = (
        "Here's how:\n\n```{lang}\n{code}\n```\n\n{Fact}.",
        "```{lang}\n{code}\n```\n\nThis works because {fact}.",
        "Use this:\n\n```{lang}\n{code}\n```",
        "{Fact}:\n\n```{lang}\n{code}\n```",
    )
    return forms[variant % len(forms)].format(
        lang=t.lang, code=t.code, Fact=_cap(t.fact), fact=t.fact
    )


def _code_prose_holdout(t: Topic, variant: int) -> str:
    forms = (
        "Something like this should do it:\n```{lang}\n{code}\n```",
        "```{lang}\n{code}\n```\nNote that {caveat}.",
    )
    return forms[variant % len(forms)].format(lang=t.lang, code=t.code, caveat=t.caveat)


def _code_only(t: Topic, variant: int) -> str:
    return f"```{t.lang}\n{t.code}\n```"


def _code_only_holdout(t: Topic, variant: int) -> str:
    return f"```\n{t.code}\n```\n"


def _numbered(t: Topic, variant: int) -> str:
    steps = "\n".join(f"{i}. {_cap(s)}." for i, s in enumerate(t.steps, start=1))
    forms = ("{steps}", "Do it in four steps:\n\n{steps}", "{steps}\n\nThat's it: {fact}.")
    return forms[variant % len(forms)].format(steps=steps, fact=t.fact)


def _numbered_holdout(t: Topic, variant: int) -> str:
    steps = "\n".join(f"{i}) {_cap(s)}" for i, s in enumerate(t.steps, start=1))
    return f"Steps:\n{steps}"


def _ordinal(t: Topic, variant: int) -> str:
    a, b, c, d = t.steps
    forms = (
        "First, {a}. Then {b}. After that, {c}. Finally, {d}.",
        "First {a}.\nNext, {b}.\nThen {c}.\nFinally {d}.",
        "To start, {a}. Second, {b}. Third, {c}. Finally, {d}.",
    )
    return forms[variant % len(forms)].format(a=a, b=b, c=c, d=d)


def _ordinal_holdout(t: Topic, variant: int) -> str:
    a, b, c, d = t.steps
    return f"Start by making sure you {a}. Then {b}, and after that {c}. Finally, {d}."


def _headers(t: Topic, variant: int) -> str:
    a, b, c, d = t.steps
    forms = (
        "## Setup\n{A}.\n\n## Run\n{B}.\n\n## Check\n{C}.\n\n## Follow-up\n{D}.",
        "### 1. Prepare\n{A}.\n\n### 2. Apply\n{B}.\n\n### 3. Verify\n{C}, then {d}.",
    )
    return forms[variant % len(forms)].format(A=_cap(a), B=_cap(b), C=_cap(c), D=_cap(d), d=d)


def _headers_holdout(t: Topic, variant: int) -> str:
    a, b, c, d = t.steps
    return (
        f"**Step 1: prepare.** {_cap(a)}.\n\n**Step 2: apply.** {_cap(b)}.\n\n"
        f"**Step 3: check.** {_cap(c)}; {d}."
    )


def _hedged(t: Topic, variant: int) -> str:
    forms = (
        "I'm not sure, but {fact}. Keep in mind that {caveat}.",
        "I might be wrong here, but as far as I know {fact}.",
        "It's hard to say without seeing your setup. Most likely {fact}.",
        "I'm not 100% certain, but I believe {fact}; {caveat}.",
    )
    return forms[variant % len(forms)].format(fact=t.fact, caveat=t.caveat)


def _hedged_holdout(t: Topic, variant: int) -> str:
    forms = (
        "Not sure this applies to your version, but usually {fact}.",
        "I can't be certain without the logs, though probably {fact}.",
    )
    return forms[variant % len(forms)].format(fact=t.fact)


def _explanation(t: Topic, variant: int) -> str:
    forms = (
        "{Fact}. One thing to watch: {caveat}.",
        "Good question. {Fact}. Also, {caveat}, so plan for that.",
    )
    return forms[variant % len(forms)].format(Fact=_cap(t.fact), caveat=t.caveat)


def _explanation_holdout(t: Topic, variant: int) -> str:
    return f"The key point is that {t.fact}. Be aware that {t.caveat}."


def _conversational(t: Topic, variant: int) -> str:
    forms = (
        "Sure! {Fact}.",
        "Good catch - {fact}. Note that {caveat}.",
        "Yes, {fact}.",
        "Let's look at it: {fact}.",
        "Okay, so {fact}; {caveat}.",
    )
    return forms[variant % len(forms)].format(Fact=_cap(t.fact), fact=t.fact, caveat=t.caveat)


def _conversational_holdout(t: Topic, variant: int) -> str:
    forms = ("Great question! {Fact}.", "No - {fact}, and {caveat}.")
    return forms[variant % len(forms)].format(Fact=_cap(t.fact), fact=t.fact, caveat=t.caveat)


# --- junk (the user's next message, or a reply that is no answer) ---------------------------------

USER_REQUEST = (
    "do it, fewer confirmations",
    "ok go ahead and fix it",
    "can you just make it work with {thing}",
    "please update the README too",
    "yes do that. and stop asking me every time",
    "now add tests for this",
    "implement it",
    "let's do the refactor now",
    "same for the {term}",
    "continue",
    "just push it to main",
    "could you make the {term} load faster",
    "try again but keep my changes",
    "go ahead",
    "can you change this so it retries?\n```python\nresp = requests.get(url)\n```",
    'please make it use this instead:\n```json\n{{"theme": "dark", "font": 14}}\n```',
)
USER_REQUEST_HOLDOUT = (
    "alright, ship it",
    "pls redo the whole thing in swift",
    "don't ask, just do it",
    "ok now make it look nicer",
    "proceed with option 2",
    "would you change the colors of the {term} to match the logo",
    "use this config for it\n```yaml\nmodel: qwen2.5-7b\ncontext: 8192\n```",
)
USER_WISH = (
    "I want it to remember the last project I opened",
    "it should also show a progress bar while indexing",
    "would be nice if SAM could read my calendar",
    "I'd love a dark mode for the {term}",
    "can we add voice input to the {term}?",
    "we need to support multiple users eventually",
    "feature request: export chats as markdown",
    "I wish the {term} opened on startup",
    "it would be great to have keyboard shortcuts for everything",
    "SAM should always answer in the same tone as me",
    "I want the {term} to be resizable",
    "what if it synced with my phone",
    "I need it to work offline too",
    "I'd like the {term} to show the model name",
)
USER_WISH_HOLDOUT = (
    "ideally the {term} would fade in instead of popping up",
    "eventually I want to plug in my own models",
    "it needs to handle PDFs as well",
    "could we have a way to pin important chats",
    "imagine if it could summarize my email every morning",
    "the {term} must never block the main thread",
)
BUG_REPORT = (
    "it crashes when I click the save button",
    "still not working. same error as before",
    "the build fails again after your change",
    "I'm getting a blank screen on startup now",
    "nothing happens when I press enter in the {term}",
    "it keeps freezing after about 10 minutes",
    "SAM didn't respond at all this time",
    "the {term} is broken again",
    "I still get the same error",
    "it doesn't save my settings",
    "the tests fail on CI but pass locally",
    "there is still a bug in the {term}, it shows old data",
    "this throws a KeyError now",
    "it won't start anymore",
    'it crashes when I run it:\nTraceback (most recent call last):\n  File "sam.py", line 9\n'
    "KeyError: 'model'",
    "still getting this:\n```\nTypeError: Cannot read properties of undefined (reading 'map')\n```",
)
BUG_REPORT_HOLDOUT = (
    "now the {term} flickers every time I type",
    "after the update my chats are gone",
    "hmm the icon disappeared from the menu bar",
    "the app quits as soon as I open the {term}",
    "weird, the {term} shows yesterday's messages",
    "memory usage goes up to 8GB and stays there",
    "same thing happens with the new build:\n```\nSegmentation fault: 11\n```",
)
PASTED_LOG = (
    'Traceback (most recent call last):\n  File "/Users/dave/sam/main.py", line 42, in <module>\n'
    '    app.run()\n  File "/Users/dave/sam/server.py", line 17, in run\n'
    "    self.sock.bind((host, port))\nOSError: [Errno 48] Address already in use",
    "npm ERR! code ERESOLVE\nnpm ERR! ERESOLVE unable to resolve dependency tree\n"
    "npm ERR! Found: react@18.2.0\nnpm ERR! Could not resolve dependency",
    "error[E0382]: borrow of moved value: `config`\n  --> src/main.rs:14:20\n"
    "   |\n12 |     let app = App::new(config);\n"
    "   |                        ------ value moved here",
    "2026-11-20 14:02:11 INFO  Starting indexer\n2026-11-20 14:02:12 WARN  Slow disk read (812ms)\n"
    "2026-11-20 14:02:15 ERROR Indexer crashed: index out of range",
    "[14:02:11] Loading model mlx-community/Qwen2.5-7B\n[14:02:19] Model loaded in 8.1s\n"
    "[14:02:20] ERROR: Metal device lost",
    'Exception in thread "main" java.lang.NullPointerException\n'
    "    at com.sam.Indexer.run(Indexer.java:88)\n    at com.sam.Main.main(Main.java:12)",
    "/Users/dave/Library/Logs/SAM/sam.log\n/Users/dave/Library/Logs/SAM/sam.1.log\n"
    "/Users/dave/Library/Logs/SAM/crash-2026-11-20.ips",
    "WARNING: Retrying (Retry(total=4)) after connection broken\nERROR: Could not find a version "
    "that satisfies the requirement torch==2.9.0\nERROR: No matching distribution found",
)
PASTED_LOG_HOLDOUT = (
    "Fatal error: Unexpectedly found nil while unwrapping an Optional value\n"
    "2026-11-20 09:13:44.120 SAM[1234:5678] Fatal error in ChatView.swift line 211",
    "ModuleNotFoundError: No module named 'sentence_transformers'\n"
    '  File "/opt/homebrew/lib/python3.12/site-packages/sam/embed.py", line 3',
    "[2026-11-20T10:00:01Z] GET /api/chat 500 12ms\n[2026-11-20T10:00:02Z] GET /api/chat 500 9ms\n"
    "[2026-11-20T10:00:03Z] GET /api/chat 500 11ms",
)
SHELL_COMMAND = (
    "cd ~/Projects/sam && git pull && npm run dev",
    "$ python3 -m pytest -x\n$ git status",
    "pip install -r requirements.txt",
    "brew services restart postgresql",
    "git push origin main --force",
    "docker compose up -d --build",
    "export OPENAI_API_KEY=sk-test && python3 sam.py",
    "killall SAM; open /Applications/SAM.app",
)
SHELL_COMMAND_HOLDOUT = (
    "sudo rm -rf node_modules && npm install",
    "$ cargo build --release\n$ ./target/release/sam",
    "tail -f ~/Library/Logs/SAM/sam.log",
)
ACKNOWLEDGEMENT = (
    "ok thanks",
    "got it",
    "perfect, thanks!",
    "cool",
    "yep",
    "ok",
    "thx",
    "sounds good",
)
ACKNOWLEDGEMENT_HOLDOUT = ("great thank you so much", "noted.", "okay cool")
DONT_KNOW = (
    "I don't know",
    "no idea",
    "idk, you tell me",
    "not sure.",
    "dunno, whatever works",
    "I have no idea what that means",
)
DONT_KNOW_HOLDOUT = ("honestly don't know", "beats me", "I can't tell.")
QUESTION_BACK = (
    "what do you mean?",
    "which file?",
    "did you change the config?",
    "why would that happen?",
    "wait, is this the same bug as yesterday?",
    "should I restart the server first?",
    "where is the {term} defined?",
    "how long will that take?",
)
QUESTION_BACK_HOLDOUT = (
    "is that safe to run on my main machine?",
    "what version of {thing} are you using?",
    "and the {term}? does it need the same change?",
)

Template = Callable[[Topic, int], str]
# (kind, tune template, holdout template) of the genuine answers
GENUINE: tuple[tuple[str, Template, Template], ...] = (
    ("short_factual", _short_factual, _short_factual_holdout),
    ("code_with_prose", _code_prose, _code_prose_holdout),
    ("code_only", _code_only, _code_only_holdout),
    ("numbered_steps", _numbered, _numbered_holdout),
    ("first_then_finally", _ordinal, _ordinal_holdout),
    ("markdown_headers", _headers, _headers_holdout),
    ("hedged", _hedged, _hedged_holdout),
    ("explanation", _explanation, _explanation_holdout),
    ("conversational", _conversational, _conversational_holdout),
)
# (kind, tune texts, holdout texts) of the junk replies
JUNK: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("user_request", USER_REQUEST, USER_REQUEST_HOLDOUT),
    ("user_wish", USER_WISH, USER_WISH_HOLDOUT),
    ("bug_report", BUG_REPORT, BUG_REPORT_HOLDOUT),
    ("pasted_log", PASTED_LOG, PASTED_LOG_HOLDOUT),
    ("shell_command", SHELL_COMMAND, SHELL_COMMAND_HOLDOUT),
    ("acknowledgement", ACKNOWLEDGEMENT, ACKNOWLEDGEMENT_HOLDOUT),
    ("dont_know", DONT_KNOW, DONT_KNOW_HOLDOUT),
    ("question_back", QUESTION_BACK, QUESTION_BACK_HOLDOUT),
)
# `fresh`: a second holdout written after the holdout had been measured once (and the user_wish
# cue narrowed because of it); measured, never tuned on.
FRESH_GENUINE: dict[str, Template] = {
    "short_factual": lambda t, n: f"Right, {t.fact}. Nothing else is needed.",
    "code_with_prose": lambda t, n: (
        f"Try this one:\n\n```{t.lang}\n{t.code}\n```\n\nIt should behave the same everywhere."
    ),
    "code_only": lambda t, n: f"```{t.lang}\n{t.code}\n\n```",
    "numbered_steps": lambda t, n: (
        "Here's the sequence I'd follow:\n"
        + "\n".join(f"  {i}. {s}" for i, s in enumerate(t.steps, start=1))
    ),
    "first_then_finally": lambda t, n: (
        f"Firstly, {t.steps[0]}. Next, {t.steps[1]}. Lastly, {t.steps[3]}."
    ),
    "markdown_headers": lambda t, n: f"# Why\n{_cap(t.fact)}.\n\n# How\n{_cap(t.steps[1])}.",
    "hedged": lambda t, n: f"I could be wrong, but {t.fact}. Double-check it on your version.",
    "explanation": lambda t, n: f"{_cap(t.fact)}. In practice {t.caveat}.",
    "conversational": lambda t, n: f"Ah, that one. {_cap(t.fact)}.",
}
FRESH_JUNK: dict[str, tuple[str, ...]] = {
    "user_request": (
        "yes. and no more confirmations please",
        "could u also rename the {term}",
        "redo it with fewer files",
        "now do the same for the {term}",
    ),
    "user_wish": (
        "I'd really like SAM to keep a history of my prompts",
        "would be awesome if the {term} had tabs",
        "we should have a settings export",
        "I need it to start faster",
    ),
    "bug_report": (
        "the {term} doesn't open anymore after the update",
        "it failed again on the same file",
        "I'm still seeing the old icon",
        "nothing happens when I click it",
    ),
    "pasted_log": (
        "ERROR 2026-11-21 08:00:02 worker-3 Timeout after 30000ms\n"
        "ERROR 2026-11-21 08:00:05 worker-3 Timeout after 30000ms",
        'Traceback (most recent call last):\n  File "/Users/dave/sam/cli.py", line 5, in main\n'
        "ImportError: cannot import name 'Router'",
    ),
    "shell_command": (
        "git checkout -b fix/menu && git push -u origin fix/menu",
        "npm run build\nnpm run start",
    ),
    "acknowledgement": ("nice, thanks", "ok cool thx"),
    "dont_know": ("no clue", "dunno"),
    "question_back": ("is that the right folder?", "do I need to restart?"),
}
# rows per genuine kind and split
GENUINE_ROWS = {"tune": 16, "holdout": 6, "fresh": 4}


def generate() -> list[dict[str, str]]:
    """Return every labelled row, in a fixed order (kind by kind, tune before holdout)."""
    rows: list[dict[str, str]] = []

    def add(kind: str, label: str, split: str, topic: Topic, reply: str) -> None:
        rows.append(
            {
                "id": f"{kind}-{split}-{sum(r['kind'] == kind for r in rows):03d}",
                "kind": kind,
                "label": label,
                "split": split,
                "query": topic.query,
                "claude_response": reply,
            }
        )

    for kind, tune, holdout in GENUINE:
        splits = (("tune", tune), ("holdout", holdout), ("fresh", FRESH_GENUINE[kind]))
        for split, template in splits:
            for n in range(GENUINE_ROWS[split]):
                topic = TOPICS[(n * 7 + len(kind)) % len(TOPICS)]
                add(kind, "answer", split, topic, template(topic, n))
    for kind, tune_texts, holdout_texts in JUNK:
        splits = (("tune", tune_texts), ("holdout", holdout_texts), ("fresh", FRESH_JUNK[kind]))
        for split, texts in splits:
            for n, text in enumerate(texts):
                for repeat in range(2 if len(texts) < 10 else 1):
                    topic = TOPICS[(n * 5 + repeat * 3 + len(kind)) % len(TOPICS)]
                    term = TOPIC_TERMS[(n + repeat) % len(TOPIC_TERMS)]
                    add(kind, "junk", split, topic, text.format(thing=topic.thing, term=term))
    return rows
