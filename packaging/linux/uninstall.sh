#!/bin/sh
# Remove what install.sh put in place, and the model cache (~/.cache/punctum). Autosaves and
# settings are the user's and stay (~/.local/share/punctum/autosave, ~/.config/Punctum) unless
# --purge is given.
set -eu
data=${XDG_DATA_HOME:-$HOME/.local/share}
cache=${XDG_CACHE_HOME:-$HOME/.cache}
config=${XDG_CONFIG_HOME:-$HOME/.config}
purge=no
[ "${1:-}" = "--purge" ] && purge=yes
target=$data/punctum/app
if [ -L "$HOME/.local/bin/punctum" ]; then
    rm -f "$HOME/.local/bin/punctum"
fi
for size in 16 32 48 64 128 256 512; do
    rm -f "$data/icons/hicolor/${size}x${size}/apps/punctum.png"
done
rm -f "$data/icons/hicolor/scalable/apps/punctum.svg"
rm -f "$data/applications/punctum.desktop" "$data/mime/packages/punctum.xml"
rm -rf "$cache/punctum"
command -v update-mime-database >/dev/null 2>&1 && update-mime-database "$data/mime" >/dev/null 2>&1 || true
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$data/applications" >/dev/null 2>&1 || true
rm -rf "$target"
if [ "$purge" = yes ]; then
    rm -rf "$data/punctum" "$config/Punctum"
fi
rmdir "$data/punctum" 2>/dev/null || true
echo "Punctum removed."
