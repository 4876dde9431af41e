"""Run a Temporal workflow on the world's Temporal server, and recover it from there after a crash.

    python -m chaos.bundled.targets.frameworks.temporal_driver --db ADDRESS --workflow W "PROMPT"
    python -m chaos.bundled.targets.frameworks.temporal_driver --db ADDRESS --workflow W --resume

``--app module:attr`` names the workflow class (``@workflow.defn``, its run method taking the prompt) and
``--activities module:attr`` the list of its activities (the bundled ones: ``temporal_app.ACTIVITIES``),
``--plugins module:attr`` a list of the client's and worker's plugins (a framework's: Pydantic AI's
``PydanticAIPlugin`` registers an agent's activities and its data converter). The process is a worker and the starter: the start
starts the workflow under the id chaos gives and runs a worker until its result; a resume runs a worker
again, which takes the workflow's next tasks as any worker does after a crash, until its result (a
workflow the server never started: there is nothing to resume). The worker keeps no workflow cached
(no sticky queue: a dead worker's next task goes to the next worker at once; ``--cache`` keeps them, as
Temporal's default does, with a sticky queue given up after ``STICKY``), and a workflow task's timeout is
``TASK_TIMEOUT``, so a recovery waits for the dead worker no longer than it must.
``TEMPORAL_DRIVER_BUG=prompt-again-on-lost-connection`` is a starter's classic mistake, for the fault
table: its client does not retry, and a start whose answer was lost is started again under a new id.
Exit 0: completed; 1: the workflow failed. The process ends at once once the worker has shut down
(``os._exit``, its output flushed): the SDK's native threads outlive the worker, and one that takes the
interpreter's lock while it finalizes crashes it (a SIGSEGV or an abort after the answer was printed, in
about one run in fifteen here).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from datetime import timedelta

from temporalio.client import Client, WorkflowFailureError
from temporalio.service import RetryConfig, RPCError, RPCStatusCode
from temporalio.worker import Worker

from .loading import load, parser

QUEUE = "chaos-agent"
TASK_TIMEOUT = timedelta(seconds=2)
STICKY = timedelta(seconds=1)
NO_RETRIES = RetryConfig(max_retries=1, initial_interval_millis=1, max_elapsed_time_millis=1)


async def _run(args: argparse.Namespace) -> int:
    address, workflow_id = args.db, args.workflow
    agent, activities = load(args.app, "-"), load(args.activities, "-")
    plugins = load(args.plugins, "-") if args.plugins else []
    again = os.environ.get("TEMPORAL_DRIVER_BUG") == "prompt-again-on-lost-connection"
    client = await Client.connect(address, plugins=plugins)
    # the mistake's starter: a client that does not retry (the SDK's retries once, at once, and gives up)
    starter = await Client.connect(address, plugins=plugins, retry_config=NO_RETRIES) if again else client
    cache = {"sticky_queue_schedule_to_start_timeout": STICKY} if args.cache else {"max_cached_workflows": 0}
    async with Worker(client, task_queue=QUEUE, workflows=[agent], activities=activities, **cache):
        if args.resume:
            handle = client.get_workflow_handle(workflow_id)
            try:
                await handle.describe()
            except RPCError as err:
                if err.status != RPCStatusCode.NOT_FOUND:
                    raise
                print("nothing to resume")
                return 0
        else:
            try:
                handle = await starter.start_workflow(
                    agent.run, args.prompt, id=workflow_id, task_queue=QUEUE, task_timeout=TASK_TIMEOUT
                )
            except RPCError:
                if not again:
                    raise
                await asyncio.sleep(1)  # (the server back)
                handle = await client.start_workflow(
                    agent.run,
                    args.prompt,
                    id=f"{workflow_id}-again",
                    task_queue=QUEUE,
                    task_timeout=TASK_TIMEOUT,
                )
        try:
            result = await handle.result()
        except WorkflowFailureError as err:
            print(f"temporal agent: the workflow failed: {err.cause or err}", file=sys.stderr)
            return 1
    print(result)
    return 0


def main(argv: list[str]) -> int:
    options = parser(
        "temporal_driver",
        "chaos.bundled.targets.frameworks.temporal_app:Agent",
        "127.0.0.1:7233",
        "--workflow",
    )
    options.add_argument("--activities", default="chaos.bundled.targets.frameworks.temporal_app:ACTIVITIES")
    options.add_argument("--plugins", default="", help="module:attr, a list of the client's plugins")
    options.add_argument("--cache", action="store_true", help="keep workflows cached (Temporal's default)")
    return asyncio.run(_run(options.parse_args(argv)))


if __name__ == "__main__":
    status = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
