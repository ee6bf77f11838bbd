"""``python -m toolgate.demo.tracker --db PATH``: the tracker backend over stdio."""

from toolgate.demo.tracker import main

if __name__ == "__main__":
    main()
