"""`manage.py mcp`: hakimem's memory as an MCP server (integrations/mcp_server.py), over stdio by default (an
agent's host starts it), or streamable HTTP with --http (at http://HOST:PORT/mcp)."""

import os

from django.core.management.base import BaseCommand, CommandError

from integrations.mcp_server import MemoryTools, build_server


class Command(BaseCommand):
    help = "Serve the memory tools (remember, recall, forget, inspect) over MCP, scoped by an API key."

    def add_arguments(self, parser):
        parser.add_argument(
            "--api-key",
            default=os.environ.get("HAKI_MCP_API_KEY"),
            help="the key whose project the tools act on (default: $HAKI_MCP_API_KEY)",
        )
        parser.add_argument(
            "--subject",
            default=os.environ.get("HAKI_MCP_SUBJECT"),
            help="the subject used when a tool call names none (default: $HAKI_MCP_SUBJECT)",
        )
        parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
        parser.add_argument("--host", default="127.0.0.1", help="with --http (default 127.0.0.1)")
        parser.add_argument("--port", type=int, default=8765, help="with --http (default 8765)")

    def handle(self, *args, api_key, subject, http, host, port, **options):
        if not api_key:
            raise CommandError(
                "give an API key: --api-key KEY or HAKI_MCP_API_KEY (manage.py create_api_key makes one)"
            )
        tools = MemoryTools(api_key, default_subject=subject)
        try:
            server = build_server(tools)
        except Exception as exc:  # the key is checked once at start: fail there, before any client connects
            raise CommandError(str(exc)) from exc
        # On stdio, stdout is the protocol's channel: nothing else may be written to it.
        if http:
            self.stderr.write(f"hakimem MCP server on http://{host}:{port}/mcp")
            server.run("streamable-http", host=host, port=port)
        else:
            server.run("stdio")
