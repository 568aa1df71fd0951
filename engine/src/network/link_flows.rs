//! Which running flows (by slot) cross each link, for
//! [`super::FairShareNetwork`]'s component searches.
//!
//! Most links carry no flow or one (the 1T model on 3,072 GPUs under
//! `--contention` runs about 186 flows at a time over tens of thousands of
//! links), so a link's count and its sole flow sit side by side in one
//! dense array (one cache line per link touched), and only a link with two
//! or more flows keeps them in a list of its own (a separate allocation,
//! one more cache miss, as every link's list was before). The order of a link's flows is never read: the
//! component search sorts what it finds by flow id.

/// Running flows per link: counts, sole flows, and lists of two or more.
#[derive(Debug, Clone)]
pub struct LinkFlows {
    /// Per link: (flows crossing it, its flow while that count is 1).
    count_and_sole: Vec<(u32, u32)>,
    /// The link's flows while its count is 2 or more (empty otherwise).
    many: Vec<Vec<u32>>,
}

impl LinkFlows {
    pub fn new(links: usize) -> LinkFlows {
        LinkFlows {
            count_and_sole: vec![(0, 0); links],
            many: vec![Vec::new(); links],
        }
    }

    /// Whether no flow crosses `link`.
    #[inline]
    pub fn is_empty(&self, link: usize) -> bool {
        self.count_and_sole[link].0 == 0
    }

    /// The flows crossing `link`.
    #[inline]
    pub fn on(&self, link: usize) -> &[u32] {
        match self.count_and_sole[link].0 {
            0 => &[],
            1 => std::slice::from_ref(&self.count_and_sole[link].1),
            _ => &self.many[link],
        }
    }

    /// Lists `slot` on `link`.
    #[inline]
    pub fn add(&mut self, link: usize, slot: u32) {
        let (count, sole) = &mut self.count_and_sole[link];
        match *count {
            0 => *sole = slot,
            1 => {
                let many = &mut self.many[link];
                many.push(*sole);
                many.push(slot);
            }
            _ => self.many[link].push(slot),
        }
        *count += 1;
    }

    /// Takes `slot` off `link`, where it is listed.
    #[inline]
    pub fn remove(&mut self, link: usize, slot: u32) {
        let (count, sole) = &mut self.count_and_sole[link];
        match *count {
            0 => panic!("flow slot {slot} is not listed on link {link}"),
            1 => assert_eq!(*sole, slot, "a running flow is listed on its links"),
            _ => {
                let many = &mut self.many[link];
                let at = many
                    .iter()
                    .position(|&other| other == slot)
                    .expect("a running flow is listed on its links");
                many.swap_remove(at);
                if many.len() == 1 {
                    *sole = many[0];
                    many.clear();
                }
            }
        }
        *count -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_lists_what_was_added_and_not_removed() {
        let mut flows = LinkFlows::new(2);
        assert!(flows.is_empty(0));
        flows.add(0, 7);
        assert_eq!(flows.on(0), [7]);
        flows.add(0, 3);
        flows.add(0, 9);
        flows.add(1, 3);
        flows.remove(0, 7);
        let mut on = flows.on(0).to_vec();
        on.sort_unstable();
        assert_eq!(on, [3, 9]);
        flows.remove(0, 9);
        assert_eq!(flows.on(0), [3]);
        flows.add(0, 4);
        flows.remove(0, 3);
        assert_eq!(flows.on(0), [4]);
        flows.remove(0, 4);
        assert!(flows.is_empty(0) && flows.on(0).is_empty());
        assert_eq!(flows.on(1), [3]);
    }
}
