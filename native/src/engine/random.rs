//! CPython's `random.Random`, reproduced exactly: the Mersenne Twister MT19937 with CPython's
//! seeding from an integer (`init_by_array` over the 32-bit words of |seed|,
//! Modules/_randommodule.c `random_seed`), its 53-bit `random()` and `expovariate()`
//! (Lib/random.py, 3.11). The link draws its loss and jitter from it, so a seeded run gives
//! the same packets on both engines (tcpsim/engine/link.py).

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// `init_genrand(19650218)`, where every `init_by_array` starts: computed once per process.
fn base_state() -> &'static [u32; N] {
    static BASE: std::sync::OnceLock<[u32; N]> = std::sync::OnceLock::new();
    BASE.get_or_init(|| {
        let mut r = Random {
            mti: N + 1,
            mt: Box::new([0; N]),
        };
        r.init_genrand(19_650_218);
        *r.mt
    })
}

/// `random.Random(seed)`: the generator state and its position. The 2.5 KiB state is a
/// block of its own and the position sits with whatever holds the generator (a flow's link
/// or application), so the line the next draw reads is known without reading the state
/// (`prefetch`).
pub struct Random {
    mti: usize,
    mt: Box<[u32; N]>,
}

impl Random {
    /// `random.Random(seed)` for an integer seed (negative seeds use |seed|, as CPython).
    pub fn new(seed: i128) -> Self {
        let mut key: Vec<u32> = Vec::new();
        let mut n = seed.unsigned_abs();
        while n > 0 {
            key.push((n & 0xffff_ffff) as u32);
            n >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        let mut r = Random {
            mti: N + 1,
            mt: Box::new([0; N]),
        };
        r.init_by_array(&key);
        r
    }

    /// Ask the CPU for the state the next draw reads (a hint: src/prefetch.rs).
    #[inline]
    pub fn prefetch(&self) {
        crate::prefetch::lines(&self.mt[self.mti.min(N - 1)], 1);
    }

    /// `init_genrand(s)` [_randommodule.c].
    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1];
            self.mt[i] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(i as u32);
        }
        self.mti = N;
    }

    /// `init_by_array(init_key)` [_randommodule.c].
    fn init_by_array(&mut self, key: &[u32]) {
        *self.mt = *base_state(); // init_genrand(19650218)
        self.mti = N;
        let (mut i, mut j) = (1usize, 0usize);
        let mut k = N.max(key.len());
        while k > 0 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
            k -= 1;
        }
        k = N - 1;
        while k > 0 {
            let prev = self.mt[i - 1];
            self.mt[i] = (self.mt[i] ^ (prev ^ (prev >> 30)).wrapping_mul(1_566_083_941))
                .wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                self.mt[0] = self.mt[N - 1];
                i = 1;
            }
            k -= 1;
        }
        self.mt[0] = 0x8000_0000;
    }

    /// `genrand_uint32()` [_randommodule.c]: the next 32-bit output.
    pub fn genrand_u32(&mut self) -> u32 {
        if self.mti >= N {
            let mag = |y: u32| if y & 1 == 1 { MATRIX_A } else { 0 };
            for kk in 0..N - M {
                let y = (self.mt[kk] & UPPER_MASK) | (self.mt[kk + 1] & LOWER_MASK);
                self.mt[kk] = self.mt[kk + M] ^ (y >> 1) ^ mag(y);
            }
            for kk in N - M..N - 1 {
                let y = (self.mt[kk] & UPPER_MASK) | (self.mt[kk + 1] & LOWER_MASK);
                self.mt[kk] = self.mt[kk + M - N] ^ (y >> 1) ^ mag(y);
            }
            let y = (self.mt[N - 1] & UPPER_MASK) | (self.mt[0] & LOWER_MASK);
            self.mt[N - 1] = self.mt[M - 1] ^ (y >> 1) ^ mag(y);
            self.mti = 0;
        }
        let mut y = self.mt[self.mti];
        self.mti += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: a float in [0, 1) with 53 random bits (`random_random`).
    pub fn random(&mut self) -> f64 {
        let a = (self.genrand_u32() >> 5) as f64;
        let b = (self.genrand_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `random()` as the integer k of k / 2**53 (the same draw, no float).
    pub fn random_k53(&mut self) -> u64 {
        let a = u64::from(self.genrand_u32() >> 5);
        let b = u64::from(self.genrand_u32() >> 6);
        (a << 26) | b
    }

    /// `expovariate(lambd)` (Lib/random.py 3.11): `-log(1 - random()) / lambd`.
    pub fn expovariate(&mut self, lambd: f64) -> f64 {
        -(1.0 - self.random()).ln() / lambd
    }
}

/// A `Random(seed)` made at its first draw: a flow's link and applications hold one per
/// stream, and most never draw (no loss, no jitter), so most of the 2.5 KiB states are never
/// built. The draws are those of `Random::new(seed)`.
pub struct LazyRandom {
    seed: i128,
    r: Option<Random>,
}

impl LazyRandom {
    pub fn new(seed: i128) -> Self {
        LazyRandom { seed, r: None }
    }

    /// The generator, made now if this is its first draw.
    pub fn get(&mut self) -> &mut Random {
        let seed = self.seed;
        self.r.get_or_insert_with(|| Random::new(seed))
    }

    /// `Random::prefetch` of the generator, once made.
    #[inline]
    pub fn prefetch(&self) {
        if let Some(r) = &self.r {
            r.prefetch();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{LazyRandom, Random};

    #[test]
    fn lazy_draws_as_eager() {
        let (mut a, mut b) = (Random::new(12345), LazyRandom::new(12345));
        for _ in 0..1000 {
            assert_eq!(a.random_k53(), b.get().random_k53());
        }
    }

    /// Values printed by CPython 3.11: `random.Random(s).random()` for a few seeds.
    #[test]
    fn matches_cpython_first_draws() {
        for (seed, want) in [
            (0i128, 0.8444218515250481f64),
            (1, 0.13436424411240122),
            (42, 0.6394267984578837),
            (-42, 0.6394267984578837),
            (1 << 40, 0.1036394562812375),
        ] {
            assert_eq!(Random::new(seed).random(), want, "seed {seed}");
        }
    }
}
