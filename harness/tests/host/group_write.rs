//! `group_write::<name>`: a checkout made under umask 002 (folders 0775, files 0664, the group
//! the user's private group, as Debian, Ubuntu and Fedora set up every user) is trusted; a folder
//! its group can write where that group may hold someone else is refused, and the message names
//! the folder and the `chmod` that fixes it. The library named is a planted one whose
//! constructor leaves a marker: when it is trusted it is loaded (and refused as not NVRTC).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::loader_path::{plant_library, run_in};

fn mode(p: &Path, m: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

#[test]
fn a_checkout_made_under_umask_002_is_trusted_when_its_group_is_the_owners_own() {
    let tmp = tempfile::tempdir().unwrap();
    let co = tmp.path().join("checkout");
    let lib_dir = co.join(".racegate/nvrtc/nvidia/cu13/lib");
    let lib = plant_library(&lib_dir, "libnvrtc.so.13");
    for d in [&co, &co.join(".racegate"), &co.join(".racegate/nvrtc")] {
        mode(d, 0o775);
    }
    for d in [
        co.join(".racegate/nvrtc/nvidia"),
        co.join(".racegate/nvrtc/nvidia/cu13"),
    ] {
        mode(&d, 0o775);
    }
    mode(&lib_dir, 0o775);
    mode(&lib, 0o664);
    let work = tmp.path().join("work");
    super::copy_dir(&super::package_dir().join("../examples/gate"), &work);
    let cache = tmp.path().join("cache");
    let run = |marker: &Path| {
        run_in(
            &work,
            &["compile"],
            &[
                ("RACEGATE_NVRTC_LIB", lib.as_os_str()),
                ("RACEGATE_CACHE", cache.as_os_str()),
                ("PLANTED_MARKER", marker.as_os_str()),
            ],
        )
    };
    let meta = std::fs::metadata(&co).unwrap();
    let private = racegate::build::trust::private_group(meta.uid(), meta.gid());
    let marker = tmp.path().join("marker-1");
    let (code, text) = run(&marker);
    assert_eq!(code, Some(3), "{text}");
    if private {
        assert!(
            marker.exists(),
            "a checkout writable only by its owner's private group was refused:\n{text}"
        );
        assert!(text.contains("is not NVRTC"), "{text}");
    } else {
        assert!(!marker.exists(), "{text}");
        let shown = co.display().to_string();
        assert!(
            text.contains(&format!("{shown} is writable by group or others"))
                && text.contains(&format!("fix: chmod g-w {shown}")),
            "the folder and its fix are not named:\n{text}"
        );
    }
    // A group that is not the owner's own (here one nobody is in, which only root can give):
    // refused, with the folder and the fix.
    let nobody: libc::gid_t = 65534;
    let c = std::ffi::CString::new(co.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; -1 keeps the owner.
    if unsafe { libc::chown(c.as_ptr(), u32::MAX, nobody) } != 0 {
        eprintln!("skipped the shared-group half: only root can give a folder another group");
        return;
    }
    mode(&co, 0o775);
    let marker = tmp.path().join("marker-2");
    let (code, text) = run(&marker);
    assert!(
        !marker.exists(),
        "a folder a shared group can write was trusted:\n{text}"
    );
    assert_eq!(code, Some(3), "{text}");
    let shown = co.display().to_string();
    assert!(
        text.contains(&format!(
            "{shown} is writable by group or others (mode 0775): its group, gid {nobody}, is not \
             its owner's private group; fix: chmod g-w {shown}"
        )),
        "the folder and its fix are not named:\n{text}"
    );
}
