//! The bounded channel that carries a request's notifications (progress, log messages) to its
//! response stream.
//!
//! Every request that may notify gets one, and most never send anything, so creating and
//! dropping an empty channel must be cheap: this one is a single small allocation (the queue
//! allocates only when the first message arrives). Tokio's `mpsc` allocates a cache-padded
//! channel (an aligned allocation) plus a 32-slot block up front, and both sizes miss
//! glibc's per-thread cache.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;

/// A channel holding at most `capacity` messages.
pub(crate) fn channel(capacity: usize) -> (NoteSender, NoteReceiver) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::new(),
            capacity: capacity.max(1),
            senders: 1,
            receiver_alive: true,
            receiver: None,
            waiting_senders: Vec::new(),
        }),
    });
    (
        NoteSender {
            shared: shared.clone(),
        },
        NoteReceiver { shared },
    )
}

struct Shared {
    state: Mutex<State>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // No code panics while holding the lock; a poisoned lock still holds a valid state.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct State {
    queue: VecDeque<Bytes>,
    capacity: usize,
    senders: usize,
    receiver_alive: bool,
    /// The receiver waiting for a message.
    receiver: Option<Waker>,
    /// Senders waiting for room.
    waiting_senders: Vec<Waker>,
}

impl State {
    fn wake_receiver(&mut self) {
        if let Some(waker) = self.receiver.take() {
            waker.wake();
        }
    }

    fn wake_senders(&mut self) {
        for waker in self.waiting_senders.drain(..) {
            waker.wake();
        }
    }
}

/// The receiver is gone: the message was not sent.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Closed;

/// Why [`NoteSender::try_send`] did not send.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TrySendError {
    /// The channel holds `capacity` messages.
    Full,
    /// The receiver is gone.
    Closed,
}

/// Why [`NoteReceiver::try_recv`] returned nothing.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum TryRecvError {
    /// Nothing queued; senders remain.
    Empty,
    /// Nothing queued and every sender is gone.
    Disconnected,
}

/// The sending half; clones share the channel.
pub(crate) struct NoteSender {
    shared: Arc<Shared>,
}

impl Clone for NoteSender {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        NoteSender {
            shared: self.shared.clone(),
        }
    }
}

impl Drop for NoteSender {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.senders -= 1;
        if state.senders == 0 {
            state.wake_receiver();
        }
    }
}

impl NoteSender {
    /// Sends `message`, waiting while the channel is full; fails once the receiver is gone.
    pub(crate) async fn send(&self, message: Bytes) -> Result<(), Closed> {
        let mut message = Some(message);
        poll_fn(|cx| self.poll_send(cx, &mut message)).await
    }

    fn poll_send(
        &self,
        cx: &mut Context<'_>,
        message: &mut Option<Bytes>,
    ) -> Poll<Result<(), Closed>> {
        let mut state = self.shared.lock();
        if !state.receiver_alive {
            return Poll::Ready(Err(Closed));
        }
        if state.queue.len() < state.capacity {
            if let Some(message) = message.take() {
                state.queue.push_back(message);
            }
            state.wake_receiver();
            return Poll::Ready(Ok(()));
        }
        if !state
            .waiting_senders
            .iter()
            .any(|w| w.will_wake(cx.waker()))
        {
            state.waiting_senders.push(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Sends `message` if there is room, without waiting.
    pub(crate) fn try_send(&self, message: Bytes) -> Result<(), TrySendError> {
        let mut state = self.shared.lock();
        if !state.receiver_alive {
            return Err(TrySendError::Closed);
        }
        if state.queue.len() >= state.capacity {
            return Err(TrySendError::Full);
        }
        state.queue.push_back(message);
        state.wake_receiver();
        Ok(())
    }
}

/// The receiving half.
pub(crate) struct NoteReceiver {
    shared: Arc<Shared>,
}

impl Drop for NoteReceiver {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.receiver_alive = false;
        state.receiver = None;
        let dropped = std::mem::take(&mut state.queue);
        state.wake_senders();
        drop(state);
        drop(dropped);
    }
}

impl NoteReceiver {
    /// The next message; `None` once the channel is empty and every sender is gone.
    pub(crate) async fn recv(&mut self) -> Option<Bytes> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Polls for the next message (see [`recv`](Self::recv)).
    pub(crate) fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut state = self.shared.lock();
        if let Some(message) = state.queue.pop_front() {
            state.wake_senders();
            return Poll::Ready(Some(message));
        }
        if state.senders == 0 {
            return Poll::Ready(None);
        }
        match &state.receiver {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => state.receiver = Some(cx.waker().clone()),
        }
        Poll::Pending
    }

    /// The next message if one is queued.
    pub(crate) fn try_recv(&mut self) -> Result<Bytes, TryRecvError> {
        let mut state = self.shared.lock();
        match state.queue.pop_front() {
            Some(message) => {
                state.wake_senders();
                Ok(message)
            }
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn b(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    #[tokio::test]
    async fn delivers_in_order_then_ends_when_every_sender_is_gone() {
        let (tx, mut rx) = channel(4);
        let tx2 = tx.clone();
        tx.send(b("a")).await.unwrap();
        tx2.try_send(b("b")).unwrap();
        assert_eq!(rx.try_recv(), Ok(b("a")));
        drop(tx);
        assert_eq!(rx.recv().await, Some(b("b")));
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        drop(tx2);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_full_channel_makes_senders_wait_until_there_is_room() {
        let (tx, mut rx) = channel(1);
        tx.send(b("1")).await.unwrap();
        assert_eq!(tx.try_send(b("x")), Err(TrySendError::Full));
        let sender = tokio::spawn(async move {
            tx.send(b("2")).await.unwrap();
            tx.send(b("3")).await.unwrap();
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!sender.is_finished(), "the sender waits for room");
        assert_eq!(rx.recv().await, Some(b("1")));
        assert_eq!(rx.recv().await, Some(b("2")));
        assert_eq!(rx.recv().await, Some(b("3")));
        sender.await.unwrap();
        assert_eq!(rx.recv().await, None);
    }

    #[tokio::test]
    async fn a_waiting_receiver_wakes_for_a_message_and_for_the_end() {
        let (tx, mut rx) = channel(2);
        let receiver = tokio::spawn(async move {
            let first = rx.recv().await;
            let end = rx.recv().await;
            (first, end)
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        tx.send(b("late")).await.unwrap();
        drop(tx);
        assert_eq!(receiver.await.unwrap(), (Some(b("late")), None));
    }

    #[tokio::test]
    async fn senders_fail_once_the_receiver_is_gone_even_while_waiting() {
        let (tx, rx) = channel(1);
        tx.send(b("1")).await.unwrap();
        let waiting = {
            let tx = tx.clone();
            tokio::spawn(async move { tx.send(b("2")).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(rx);
        assert_eq!(waiting.await.unwrap(), Err(Closed));
        assert_eq!(tx.send(b("3")).await, Err(Closed));
        assert_eq!(tx.try_send(b("4")), Err(TrySendError::Closed));
    }
}
