//! Output files that appear whole or not at all.
//!
//! Every kiln output is written to a temporary file beside its destination and renamed
//! over it when complete, so a failure (bad input, a full disk, Ctrl-C) never leaves half a
//! flame graph or half a profile behind.
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; [`AtomicFile::commit`] moves it into place. Dropping it without
/// committing removes the temporary file.
#[derive(Debug)]
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `dest` (through a hidden temporary file in the same directory).
    pub fn create(dest: impl AsRef<Path>) -> io::Result<Self> {
        let dest = dest.as_ref().to_path_buf();
        let dir = match dest.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = dest.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name")
        })?;
        let mut tmp_name = std::ffi::OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".kiln-tmp-{}", std::process::id()));
        let tmp = dir.join(tmp_name);
        let file = File::create(&tmp)?;
        Ok(AtomicFile {
            dest,
            tmp,
            writer: Some(BufWriter::with_capacity(128 * 1024, file)),
        })
    }

    /// The destination path.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        let w = self.writer.take().expect("writer present until commit");
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.tmp, &self.dest)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.as_mut().expect("not committed").write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.as_mut().expect("not committed").write_all(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.writer.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// Writes `dest` atomically with the bytes `f` produces.
pub fn write_atomically<E: From<io::Error>>(
    dest: impl AsRef<Path>,
    f: impl FnOnce(&mut dyn Write) -> Result<(), E>,
) -> Result<(), E> {
    let mut file = AtomicFile::create(dest)?;
    f(&mut file)?;
    file.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_and_abort() {
        let dir = std::env::temp_dir().join(format!("kiln-io-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("out.txt");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.write_all(b"half").unwrap();
        drop(f);
        assert!(!dest.exists());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "temporary file removed"
        );
        let r: Result<(), io::Error> = write_atomically(&dest, |w| w.write_all(b"whole"));
        r.unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"whole");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
