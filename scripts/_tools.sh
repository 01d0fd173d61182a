# Shared by scripts/setup and scripts/test: install SPIN and tcc from Debian when absent.
ensure_debian_tools() {
  local missing=()
  command -v spin >/dev/null 2>&1 || missing+=(spin)
  command -v tcc >/dev/null 2>&1 || missing+=(tcc)
  if [ ${#missing[@]} -eq 0 ]; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
      echo "cutespin setup: ${missing[*]} missing and not root: install them with 'apt-get install ${missing[*]}'" >&2
      return 1
    fi
  fi
  echo "Installing ${missing[*]} from Debian packages..."
  $sudo apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 || {
    $sudo apt-get update -q >/dev/null 2>&1
    $sudo apt-get install -y -q "${missing[@]}" >/dev/null
  }
}
