//! What the call-site tests share: the tree's stock object (or a loud
//! SKIPPED without a tree), a byte pattern, and a checked copy through a
//! JIT-compiled site.

use copygen::front::strategy::KernelVersion;
use copygen::jit::site::{JitSite, SiteArgs};
use copygen::tools::bench::stock::{tree_available, StockObject};

/// The stock `copy_user_64.o` of Linux `k` from its tree; `None`, with
/// SKIPPED said loudly, without a tree or Debian's tarball.
pub fn stock_object(k: KernelVersion) -> Option<StockObject> {
    if !tree_available(k) {
        eprintln!(
            "SKIPPED: no Linux {} tree and no /usr/src/linux-source-{}.tar.xz (verify/install-deps installs it)",
            k.name(),
            k.name()
        );
        return None;
    }
    Some(StockObject::load(k, None).expect("the tree's object builds"))
}

/// `n` bytes that differ from their neighbours and from another `salt`'s.
pub fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

/// Copy `n` bytes at these offsets through `site` from loop `context`;
/// check the copy, the bytes around it, and that no byte is left (rcx or
/// rax, as the site's convention returns it).
pub fn copies(site: &JitSite, context: usize, n: usize, src_off: usize, dst_off: usize) {
    let src = pattern(n + src_off + 16, 7);
    let mut dst = vec![0xeeu8; n + dst_off + 16];
    let args = [SiteArgs {
        to: dst[dst_off..].as_mut_ptr(),
        from: src[src_off..].as_ptr(),
        n,
    }];
    // SAFETY: both buffers hold n bytes at these offsets.
    let left = unsafe { site.run(context, args.as_ptr(), 1, 0) };
    assert_eq!(left, 0, "n {n}: bytes left after the site");
    assert_eq!(
        &dst[dst_off..dst_off + n],
        &src[src_off..src_off + n],
        "n {n}"
    );
    assert!(dst[..dst_off].iter().all(|&b| b == 0xee), "n {n}: below");
    assert!(
        dst[dst_off + n..].iter().all(|&b| b == 0xee),
        "n {n}: above"
    );
}
