"""Trace rules: the tool schemas and the role grammars samples are validated against.

See docs/sources/traces.md#filtering-rules.
"""

from __future__ import annotations

import json
import re

from distill_assets.rules import traces as rules


def test_tool_schemas_declare_every_argument_required() -> None:
    schemas = json.loads(rules.tools_json())
    assert [s["function"]["name"] for s in schemas] == [
        "list_files",
        "read_file",
        "grep",
        "write_file",
    ]
    grep = schemas[2]["function"]["parameters"]
    assert grep["required"] == ["pattern", "rel_dir", "max_hits"]
    assert grep["properties"]["max_hits"] == {
        "type": "integer",
        "description": "Max matches to return before truncating.",
    }
    assert all(s["function"]["parameters"]["additionalProperties"] is False for s in schemas)
    assert len(rules.tool_arg_rows()) == 9


def test_role_grammars() -> None:
    request = re.compile(rules.REQUEST_ROLE_ORDER)
    assert request.match("system,user")
    assert request.match("system,user,assistant,system,tool,assistant,tool")
    assert not request.match("system,user,assistant")
    assert not request.match("system,user,assistant,tool,tool")
    together = re.compile(rules.TOGETHER_ROLE_ORDER)
    assert together.match("system,user,assistant,user,assistant")
    assert not together.match("system,user,assistant,assistant")
    tools = re.compile(rules.TOOLS_ROLE_ORDER)
    assert tools.match("system,user,assistant,tool,user,assistant")
    assert tools.match("system,user,assistant,tool,assistant,tool,assistant")
    assert not tools.match("system,user,assistant,tool,system,assistant")
    assert not tools.match("system,user,assistant,tool,user,user,assistant")
    assert not tools.match("system,user,assistant,system,tool,assistant")
