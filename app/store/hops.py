"""Blocking calls run off the event loop, for less than `asyncio.to_thread` costs.

`asyncio.to_thread` goes through a `ThreadPoolExecutor`: a `concurrent.futures.Future`, a work
item, a semaphore, and `asyncio.wrap_future` chaining the two futures back to the loop. On the
2-core machine that is 76 µs of CPU per call, more than the database statements most calls
make (a primary-key read on SQLite takes a few µs, on PostgreSQL about 50). Here a job is a
tuple on a `queue.SimpleQueue` (a C lock, no Python on the way in), and its thread settles an
asyncio future directly through `call_soon_threadsafe`: 17 to 42 µs in the same measurement,
8 to 9 µs each with ten in flight against 27 (`docs/benchmarks.md`).

`Lane` is one thread running its jobs in order (a unit of work's statements, which share one
connection and one transaction); `off_loop` runs a call on a small shared pool of threads, as
`to_thread` would. Both run the call in a copy of the caller's context (log fields, the
current span), as `to_thread` does.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

SHARED_THREADS = 8
"""Threads behind `off_loop` (asyncio's default executor allows min(32, cores + 4))."""

_Job = tuple["asyncio.Future[Any] | None", contextvars.Context, Callable[..., Any], tuple[Any, ...]]
_STOP = None


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():  # the waiter went away (cancelled): the job ran all the same
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    """A thread's loop: run each job and hand its outcome to its loop, until told to stop."""
    while True:
        job = jobs.get()
        if job is _STOP:
            return
        future, context, function, args = job
        if future is not None and future.cancelled():
            continue  # its waiter went away before it started: skipped, as an executor does
        try:
            result, error = context.run(function, *args), None
        except BaseException as failure:  # handed to the caller, as to_thread would
            result, error = None, failure
        if future is not None:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                future.get_loop().call_soon_threadsafe(_settle, future, result, error)
        del job, future, result, error


class Lane:
    """One thread that runs the jobs given to it in order, started on the first one."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._closed = False

    def post(self, function: Callable[..., Any], *args: Any) -> None:
        """Run `function(*args)` after everything given before; nobody waits for it."""
        self._start()
        self._jobs.put((None, contextvars.copy_context(), function, args))

    def call(self, function: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Run `function(*args)` after everything given before; the future settles with it."""
        self._start()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((future, contextvars.copy_context(), function, args))
        return future

    def close(self, wait: float = 0.0) -> None:
        """Let the thread end once the jobs before this are done; the lane takes no more. With
        `wait`, wait that many seconds at most for them (a read's end is posted, not awaited:
        its connection goes back to the pool only when it runs)."""
        self._closed = True
        if self._thread is not None:
            self._jobs.put(_STOP)
            if wait > 0 and self._thread is not threading.current_thread():
                self._thread.join(wait)

    def _start(self) -> None:
        if self._closed:
            raise RuntimeError(f"{self._name}: this lane is closed")
        if self._thread is None:
            self._thread = threading.Thread(target=_serve, args=(self._jobs,), name=self._name, daemon=True)
            self._thread.start()


class _Shared:
    """The pool behind `off_loop`: `size` threads reading one queue, started with the first
    job; a job waits its turn while all of them are busy, as in asyncio's default executor.
    A fixed pool needs no count of idle threads, so handing a job over takes no lock."""

    def __init__(self, size: int) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._size = size
        self._started = False
        self._starting = threading.Lock()

    def call(self, function: Callable[..., T], args: tuple[Any, ...]) -> asyncio.Future[T]:
        if not self._started:
            self._start()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._jobs.put((future, contextvars.copy_context(), function, args))
        return future

    def _start(self) -> None:
        with self._starting:
            if self._started:
                return
            for _ in range(self._size):
                threading.Thread(
                    target=_serve, args=(self._jobs,), name="railyard-off-loop", daemon=True
                ).start()
            self._started = True


_SHARED = _Shared(SHARED_THREADS)


async def off_loop(function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """`asyncio.to_thread(function, *args, **kwargs)`, for less CPU (see the module's docstring)."""
    if kwargs:
        function = functools.partial(function, **kwargs)
    return await _SHARED.call(function, args)
