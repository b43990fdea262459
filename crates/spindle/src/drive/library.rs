//! The built-in drive library: the drive files of `drives/`, compiled in.
