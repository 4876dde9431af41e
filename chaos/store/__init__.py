"""What a target has made durable, read from its store: one small interface, one registry of adapters.

chaos judges recovery on what survives a crash. For an agent written against
the session contract that is its JSONL log (``session-log``, read by the
contract's reducer); for an agent built on a framework it is the framework's
own store: LangGraph's checkpointer (``langgraph``), the OpenAI Agents SDK's
``SQLiteSession`` (``openai-agents``), DBOS's system database (``dbos``), and
the same on the world's PostgreSQL server (``langgraph-postgres``,
``dbos-postgres``: ``chaos.store.postgres``). An adapter turns a consistent copy of the
store's files (bytes, read the moment the agent is stopped or gone) into a
``View``: the tool calls that are durable, their outputs, the final answer, and
a count of what the store holds. Everything above this stage (a store phase,
the checks that read a store, mining) reads only ``View``s, so a third store is one more
``Store`` subclass passed to ``register``; nothing else changes.
"""

from chaos.store.base import STORES, Call, Output, Save, Store, View, known, register, store_named

__all__ = ["STORES", "Call", "Output", "Save", "Store", "View", "known", "register", "store_named"]
