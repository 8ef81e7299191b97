"""Admission, as the TEST DOUBLE's scheduler keeps it: who decodes now and who waits.

SGLang 0.5.23 admits a waiting request into the running batch only when
  - a request-table row is free: at most --max-running-requests run per DP worker (managers/scheduler.py
    get_num_allocatable_reqs :4027-4050 counts the free ReqToTokenPool rows; _get_new_batch_prefill_raw
    :4119-4126 and :4226-4232 mark the batch full and stop adding), and
  - the pool has room for its input and its decode: add_one_req (managers/schedule_policy.py :1395-1445) asks
    len(input) + min(max_new_tokens, CLIP_MAX_NEW_TOKENS = 4096) (:89-91, :1407-1412) of the remaining budget, and
    answers NO_TOKEN when the running requests' reservations leave too little (:786-795, :874-881).
A request that is not admitted waits in the queue, first come first served: the head of the queue that does not fit
stops the others behind it (the prefill loop breaks on the first refusal). The double runs no GPU: one request's
prefill and decode are a sleep at the simulated speed, so N requests admitted together take one request's time
(decode is batched), and N requests with one slot take N times it.
"""

import threading

CLIP_MAX_NEW_TOKENS = 4096  # 0.5.23 managers/schedule_policy.py:89-91 (SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION)


class Admission:
    def __init__(self, max_running, pool_tokens):
        self.max_running = max(int(max_running or 1), 1)
        self.pool_tokens = max(int(pool_tokens or 1), 1)
        self.running = self.reserved = 0
        self.queue = []  # tickets, first come first served
        self.most_running = 0  # the most requests ever admitted at once (tests read it)
        self._cond = threading.Condition()
        self._next = 0

    def tokens_for(self, input_tokens, max_new_tokens):
        """What one request reserves of the pool: its input and its clipped decode, never more than the pool (a
        request alone always runs: its max_new_tokens was already clipped to the context)."""
        wanted = int(input_tokens) + min(int(max_new_tokens or 0), CLIP_MAX_NEW_TOKENS)
        return min(wanted, self.pool_tokens)

    def waiting(self):
        with self._cond:
            return len(self.queue)

    def admit(self, tokens):
        """Block until the request is at the head of the queue, a slot is free and the pool has room."""
        with self._cond:
            ticket = self._next
            self._next += 1
            self.queue.append(ticket)
            while not (self.queue[0] == ticket and self.running < self.max_running
                       and self.reserved + tokens <= self.pool_tokens):
                self._cond.wait()
            self.queue.pop(0)
            self.running += 1
            self.reserved += tokens
            self.most_running = max(self.most_running, self.running)
            self._cond.notify_all()  # the next in line may fit too

    def release(self, tokens):
        with self._cond:
            self.running -= 1
            self.reserved -= tokens
            self._cond.notify_all()
