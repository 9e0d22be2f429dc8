//! Benchmarks of the in-memory one-time store: a round's claim and finish cost the same
//! whether the store holds nothing or a million flows, and a refusal at capacity costs no
//! scan of the store.

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant, SystemTime};

use arctern::server::budget::Caller;
use arctern::server::mrtr::{Claim, MemoryOneTimeStore};
use arctern::state::FlowId;
use criterion::{Criterion, criterion_group, criterion_main};

/// Flows held by the "near full" store.
const HELD: u32 = 1_000_000;

fn id(n: u32, salt: u8) -> FlowId {
    // Spread like random ids: the store hashes an id by its own bits.
    let mut bytes = [salt; 16];
    bytes[..8].copy_from_slice(
        &u64::from(n)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15)
            .to_le_bytes(),
    );
    bytes[8..12].copy_from_slice(&n.to_be_bytes());
    FlowId::from_bytes(bytes)
}

fn caller(n: u32) -> Caller {
    Caller::new(None, Some(Ipv4Addr::from(0x0a00_0000 | (n % 1024)).into()))
}

/// A store holding `held` completed flows (spread over the token lifetime, as under a
/// steady rate), with room for `room` more.
fn store_holding(held: u32, room: u32) -> MemoryOneTimeStore {
    let capacity = usize::try_from(held + room).unwrap();
    let store = MemoryOneTimeStore::with_capacity(capacity).caller_share(capacity);
    let now = SystemTime::now();
    let rt = runtime();
    rt.block_on(async {
        use arctern::server::mrtr::OneTimeStore;
        for n in 0..held {
            let expires = now + Duration::from_secs(60 + u64::from(n % 600));
            let c = caller(n);
            store.claim(id(n, 1), expires, &c).await.unwrap();
            store.finish(id(n, 1), true, expires, &c).await.unwrap();
        }
    });
    store
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
}

/// Times `iters` rounds of new flows (claim, then finish completed) against `store`.
fn rounds(store: &MemoryOneTimeStore, iters: u64, next: &mut u32) -> Duration {
    use arctern::server::mrtr::OneTimeStore;
    let rt = runtime();
    let expires = SystemTime::now() + Duration::from_secs(600);
    let start = Instant::now();
    rt.block_on(async {
        for _ in 0..iters {
            *next = next.wrapping_add(1);
            let c = caller(*next);
            let flow = id(*next, 2);
            let claim = store.claim(flow, expires, &c).await.unwrap();
            assert_eq!(claim, Claim::Granted);
            store.finish(flow, true, expires, &c).await.unwrap();
            black_box(&claim);
        }
    });
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("one_time");
    group.bench_function("claim+finish, store near empty", |b| {
        b.iter_custom(|iters| {
            let store = store_holding(0, u32::try_from(iters).unwrap_or(u32::MAX));
            rounds(&store, iters, &mut 0)
        });
    });
    // Room for every sample's rounds; the million held flows stay.
    let full = store_holding(HELD, 20_000_000);
    let mut next = 0;
    group.bench_function("claim+finish, store holding 1,000,000", |b| {
        b.iter_custom(|iters| rounds(&full, iters, &mut next));
    });
    let at_capacity = store_holding(HELD, 0);
    group.bench_function("claim refused, store at capacity (1,000,000)", |b| {
        use arctern::server::mrtr::OneTimeStore;
        let rt = runtime();
        let expires = SystemTime::now() + Duration::from_secs(600);
        let mut n = 0u32;
        b.iter(|| {
            n = n.wrapping_add(1);
            let claim = rt
                .block_on(at_capacity.claim(id(n, 3), expires, &caller(n)))
                .unwrap();
            assert!(matches!(claim, Claim::OverBudget(_)));
            black_box(claim)
        });
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
