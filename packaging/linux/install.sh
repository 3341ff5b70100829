#!/bin/sh
# Install Punctum for this user, following the XDG conventions:
#   the program            $XDG_DATA_HOME/punctum/app   (~/.local/share/punctum/app)
#   the command            ~/.local/bin/punctum
#   the menu entry         $XDG_DATA_HOME/applications/punctum.desktop
#   the icon               $XDG_DATA_HOME/icons/hicolor/<size>/apps/punctum.png (and scalable SVG)
#   file types             $XDG_DATA_HOME/mime/packages/punctum.xml (.srt, .vtt, .ass, .ssa, .punctum)
# Run it from the unpacked folder. ~/.local/share/punctum/app/uninstall.sh removes all of it.
set -eu
here=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
data=${XDG_DATA_HOME:-$HOME/.local/share}
bin=$HOME/.local/bin
target=$data/punctum/app

if [ ! -x "$here/punctum/punctum" ]; then
    echo "install.sh: run it from the unpacked Punctum folder (punctum/punctum not found)" >&2
    exit 1
fi
mkdir -p "$data/punctum" "$bin" "$data/applications" "$data/mime/packages"
rm -rf "$target.new"
cp -R "$here/punctum" "$target.new"
cp "$here/uninstall.sh" "$here/VERSION" "$target.new/"
rm -rf "$target"
mv "$target.new" "$target"
ln -sf "$target/punctum" "$bin/punctum"

for size in 16 32 48 64 128 256 512; do
    mkdir -p "$data/icons/hicolor/${size}x${size}/apps"
    cp "$here/icons/punctum-$size.png" "$data/icons/hicolor/${size}x${size}/apps/punctum.png"
done
mkdir -p "$data/icons/hicolor/scalable/apps"
cp "$here/icons/punctum.svg" "$data/icons/hicolor/scalable/apps/punctum.svg"
sed "s|^Exec=punctum|Exec=$target/punctum|" "$here/punctum.desktop" > "$data/applications/punctum.desktop"
cp "$here/punctum-mime.xml" "$data/mime/packages/punctum.xml"

# Refresh the desktop's caches where the tools are there; the files work without them too.
command -v update-mime-database >/dev/null 2>&1 && update-mime-database "$data/mime" >/dev/null 2>&1 || true
command -v update-desktop-database >/dev/null 2>&1 && update-desktop-database "$data/applications" >/dev/null 2>&1 || true
command -v gtk-update-icon-cache >/dev/null 2>&1 && gtk-update-icon-cache -q -t "$data/icons/hicolor" >/dev/null 2>&1 || true

echo "Punctum $(cat "$here/VERSION") installed in $target"
case ":$PATH:" in
    *":$bin:"*) ;;
    *) echo "Add $bin to your PATH to run 'punctum' from a terminal." ;;
esac
