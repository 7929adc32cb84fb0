//! A map of free trays that knows its count and its fingerprint, so a policy's decision on a
//! map it has already seen is looked up instead of made again ([`crate::contenders::policy::Placer`]'s
//! memo).
//!
//! The fingerprint is a 128-bit Zobrist hash: the XOR of a fixed pseudo-random key per free
//! tray, kept up to date in O(1) per tray that changes. Two different maps share a fingerprint
//! with probability 2^-128 per pair compared: over the ~10^9 lookups of the largest run, about
//! 10^-20, far below any other error the simulator has.

/// The fingerprint of a set of free trays.
pub type Print = u128;

/// Tray `t`'s key: SplitMix64's output function (Steele, Lea and Flood 2014) on two
/// different inputs. Fixed, so every run and every policy sees the same fingerprints.
pub fn tray_key(t: usize) -> Print {
    fn mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let t = t as u64;
    let golden = 0x9e37_79b9_7f4a_7c15_u64;
    let lo = mix(t.wrapping_add(1).wrapping_mul(golden));
    let hi = mix((t ^ 0x5555_5555_5555_5555)
        .wrapping_add(2)
        .wrapping_mul(golden));
    (Print::from(hi) << 64) | Print::from(lo)
}

/// The fingerprint change when `trays` (all of one state) turn over.
pub fn print_of(trays: &[usize]) -> Print {
    trays.iter().fold(0, |p, &t| p ^ tray_key(t))
}

/// Which trays are free, how many (in all and in each rack), and the fingerprint of the set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreeMap {
    free: Vec<bool>,
    count: usize,
    print: Print,
    /// Trays per rack: tray `t` lies in rack `t / per_rack`.
    per_rack: usize,
    in_rack: Vec<u32>,
}

impl FreeMap {
    /// `free` on racks of `per_rack` trays.
    pub fn new(free: &[bool], per_rack: usize) -> FreeMap {
        let mut map = FreeMap::none(free.len(), per_rack);
        for (t, &f) in free.iter().enumerate() {
            map.set(t, f);
        }
        map
    }

    /// `trays` trays on racks of `per_rack`, none of them free.
    pub fn none(trays: usize, per_rack: usize) -> FreeMap {
        let per_rack = per_rack.max(1);
        FreeMap {
            free: vec![false; trays],
            count: 0,
            print: 0,
            per_rack,
            in_rack: vec![0; trays.div_ceil(per_rack)],
        }
    }

    pub fn per_rack(&self) -> usize {
        self.per_rack
    }

    /// Free trays in each rack.
    pub fn in_racks(&self) -> &[u32] {
        &self.in_rack
    }

    pub fn as_slice(&self) -> &[bool] {
        &self.free
    }

    pub fn count(&self) -> usize {
        self.count
    }

    pub fn print(&self) -> Print {
        self.print
    }

    pub fn is_free(&self, t: usize) -> bool {
        self.free[t]
    }

    pub fn set(&mut self, t: usize, free: bool) {
        if self.free[t] != free {
            self.free[t] = free;
            self.print ^= tray_key(t);
            let rack = &mut self.in_rack[t / self.per_rack];
            if free {
                self.count += 1;
                *rack += 1;
            } else {
                self.count -= 1;
                *rack -= 1;
            }
        }
    }

    /// Marks `trays` busy (those already busy stay so).
    pub fn take(&mut self, trays: &[usize]) {
        for &t in trays {
            self.set(t, false);
        }
    }

    /// Marks `trays` free (those already free stay so).
    pub fn give(&mut self, trays: &[usize]) {
        for &t in trays {
            self.set(t, true);
        }
    }

    /// Marks `trays`, all busy, free; `print` is [`print_of`] them, known beforehand (a
    /// running job's), so no tray's key is computed again.
    pub fn give_busy(&mut self, trays: &[usize], print: Print) {
        debug_assert_eq!(print, print_of(trays));
        for &t in trays {
            debug_assert!(!self.free[t], "tray {t} is already free");
            self.free[t] = true;
            self.in_rack[t / self.per_rack] += 1;
        }
        self.count += trays.len();
        self.print ^= print;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_the_sets_whatever_the_path_to_it() {
        let mut a = FreeMap::new(&[true, false, true, true], 2);
        let b = FreeMap::new(&[false, false, true, true], 2);
        assert_ne!(a.print(), b.print());
        a.take(&[0, 1]);
        assert_eq!(a, b);
        a.give(&[0]);
        a.take(&[0]);
        let mut c = b.clone();
        c.give_busy(&[0, 1], print_of(&[0, 1]));
        assert_eq!(c, FreeMap::new(&[true; 4], 2));
        assert_eq!((a.count(), a.print()), (2, b.print()));
        assert_eq!(b.print(), print_of(&[2, 3]));
        assert_eq!(b.in_racks(), [0, 2]);
        assert_eq!(FreeMap::none(4, 2).print(), 0);
    }

    #[test]
    fn keys_differ_and_use_both_halves() {
        let keys: std::collections::BTreeSet<Print> = (0..100_000).map(tray_key).collect();
        assert_eq!(keys.len(), 100_000);
        assert!(keys.iter().all(|&k| (k >> 64) != 0 && (k as u64) != 0));
    }
}
