# bash completion for dtsim. The subcommands and each one's options are read from the installed binary's own --help,
# so this file never lists them and cannot drift from them. zsh uses it too (tools/completion/_dtsim).
_dtsim() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}" sub="" word
  for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case "$word" in -*) ;; *) sub="$word"; break ;; esac
  done
  if [[ -z "$sub" && "$cur" != -* ]]; then
    # Subcommands: the indented names under "Subcommands:" in `dtsim --help`.
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" --help 2>/dev/null |
      awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}')" -- "$cur"))
    return
  fi
  if [[ "$cur" == -* ]]; then
    # Options: every --long and -s name the subcommand's --help lists.
    COMPREPLY=($(compgen -W "$("${COMP_WORDS[0]}" ${sub:+"$sub"} --help 2>/dev/null |
      grep -oE '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ,' | sort -u)" -- "$cur"))
    return
  fi
  case "$prev" in
    --csv | --json | --html | --trace | --out | -o | --root) COMPREPLY=($(compgen -f -- "$cur")) ;;
    *) COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur")) ;; # scenario files
  esac
}
complete -o filenames -F _dtsim dtsim
