//! A generated `.tar.gz` that looks like a llama.cpp CUDA build to gzip and
//! to the unpacker, as `ci/bench-vs-shell.sh` makes one: under
//! `llama-b10850/`, large incompressible libraries (pseudo-random bytes, as
//! CUDA kernels' fat binaries are to gzip), a text file that compresses to
//! about 3/4 (base64 of random bytes), a repetitive one that compresses to
//! almost nothing, and a few dozen small files; gzip level 6.

use std::io::Write;

/// Pseudo-random bytes (xorshift64*), deterministic for a seed.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        out.extend_from_slice(&x.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// A `.tar.gz` of about `mib` MiB once compressed, and the bytes it unpacks to.
pub fn cuda_like_tar_gz(mib: usize) -> (Vec<u8>, u64) {
    let random = mib * 3 / 4;
    let text = (mib - random) * 4 / 3;
    let mut files: Vec<(String, Vec<u8>)> = vec![
        ("libggml-cuda.so".into(), random_bytes((random / 2) << 20, 1)),
        ("libcublasLt.so.13".into(), random_bytes((random - random / 2) << 20, 2)),
    ];
    let b64 = base64_lines(&random_bytes((text << 20) * 3 / 4, 3));
    files.push(("libcudart.so.13.txt".into(), b64));
    let line = b"llama.cpp b10850: repetitive symbol tables and licence text, as shipped\n";
    files.push(("LICENSES.txt".into(), line.iter().copied().cycle().take((mib / 8) << 20).collect()));
    for i in 1..=40 {
        files.push((format!("small-{i}.txt"), format!("small file {i}\n").into_bytes()));
    }
    let unpacked = files.iter().map(|(_, b)| b.len() as u64).sum();
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6)));
    for (name, body) in &files {
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o755);
        h.set_cksum();
        tar.append_data(&mut h, format!("llama-b10850/{name}"), &body[..]).expect("a tar in memory");
    }
    let gz = tar.into_inner().expect("a tar in memory").finish().expect("gzip in memory");
    (gz, unpacked)
}

/// Base64 in lines of 76 characters, as `base64 -w 76` writes.
fn base64_lines(bytes: &[u8]) -> Vec<u8> {
    use base64::Engine;
    let mut out = Vec::with_capacity(bytes.len() * 4 / 3 + bytes.len() / 57 + 1);
    for line in bytes.chunks(57) {
        out.extend_from_slice(base64::engine::general_purpose::STANDARD.encode(line).as_bytes());
        out.write_all(b"\n").expect("a Vec");
    }
    out
}
